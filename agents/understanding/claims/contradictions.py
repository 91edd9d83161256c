"""A figure the evidence states differently for the same thing: a contradiction, no model.

"12 rooms on the first floor" against a floor plan's "21 rooms on the first floor" (the
examples are made up, no case of an eval set): the same unit and the same thing, another
number. A figure is said of its own conjunct: in "12 EUR for adults and 7 EUR for children",
12 of adults, however near "children" follows it (`agents.understanding.language.clauses`).
Numbers written in words count ("twelve rooms"), and words are compared as lemmas in the
text's language. The draft's figure being one arithmetic step from two of the evidence's
figures (21 - 9, the "9 suites" of another sentence) does not excuse it: that leniency
(`agents.understanding.claims.grounding`) is for results the question asks to compute, and a
question that gives a figure (a 4-night stay: 4 × 85) or a tool's result still excuses one.
A figure followed by a comparison ("3 rooms more than") is a difference, never a
restatement, and is left alone. So is a figure derived from the very statements it is
compared with: their mean ("on average 20 rooms a floor" of floors of 18, 21 and 21
rooms), or one of them divided by another figure of its sentence, a rate ("12 km
a day" of "84 km in 7 days"). Unlike the other grounding checks this one runs whether or
not the draft cites: the draft contradicts what the run read either way.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from agents.understanding.language import clauses
from agents.understanding.language.numbers import CITATION, with_digits
from agents.understanding.language.words import function_words, language, lemma

# A number that is neither part of a clock time, a date, a version ("1.4.2") nor a word.
_FIGURE = re.compile(r"(?<![\w.:/-])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\d:]|\.\d|-\d)")
_WORD = re.compile(r"%|[^\W\d_]+")
TAIL_WORDS = 4
# A figure followed by one of these is a difference or a bound, not the thing's value.
_COMPARING = frozenset(
    """
    more less fewer longer shorter higher lower than over under before after left
    remaining difference between
    """.split()  # noqa: SIM905  (a word list reads better as words)
)


@dataclass(frozen=True, slots=True)
class Stated:
    """A figure with what it counts: its unit, the words of its own conjunct (``own``) and
    those with the sentence's subject it shares (``about``)."""

    value: float
    unit: str
    about: frozenset[str]
    text: str
    own: frozenset[str] = frozenset()
    beside: tuple[float, ...] = ()
    """The other figures of its sentence (the span of a rate: "84 km in 7 days")."""


def _content(text: str, lang: str, function: frozenset[str]) -> set[str]:
    return {lemma(w, lang) for w in _WORD.findall(text) if w.lower() not in function}


def stated(text: str, lang: str | None = None) -> Iterator[Stated]:
    """The figures of ``text`` that come with a unit, each with the words it is said with.

    A figure is said with the words of its conjunct (`agents.understanding.language.clauses`):
    in "62 EUR in Germany and 48 EUR in Portugal", 62 of Germany and 48 of Portugal. The
    words before the sentence's first figure are its subject, said of every conjunct after
    them too. Numbers written in words count ("twenty-seven days"); words are compared as
    lemmas ("holidays" is "holiday"), and the language's function words name no thing.
    """
    lang = lang or language(text)
    function = function_words(lang)
    for sentence in clauses.sentences(with_digits(CITATION.sub(" ", text), lang)):
        first = _FIGURE.search(sentence)
        head: set[str] = _content(sentence[: first.start()], lang, function) if first else set()
        figures = [_value(m) for m in _FIGURE.finditer(sentence)]
        for start, end in clauses.conjuncts(sentence, lang):
            for found in _in_conjunct(sentence, start, end, head, lang, function):
                beside = list(figures)
                if found.value in beside:
                    beside.remove(found.value)
                yield dataclasses.replace(found, beside=tuple(beside))


def _value(match: re.Match[str]) -> float:
    return float(match.group(0).replace(",", ""))


def _in_conjunct(
    sentence: str, start: int, end: int, head: set[str], lang: str, function: frozenset[str]
) -> Iterator[Stated]:
    part = sentence[start:end]
    matches = list(_FIGURE.finditer(part))
    if not matches:
        return
    # With several figures in one conjunct ("5 days × 62 EUR"), each is said with the
    # words after it up to the next, and with what comes before the first.
    before = part[: matches[0].start()]
    for match, after in itertools.zip_longest(matches, matches[1:]):
        if match is None:
            continue
        stop = after.start() if after is not None else len(part)
        following = _WORD.findall(part[match.end() : stop])
        if not following or any(w.lower() in _COMPARING for w in following[: 1 + TAIL_WORDS]):
            continue
        unit = lemma(following[0], lang)
        said = part if len(matches) == 1 else before + part[match.end() : stop]
        own = _content(said, lang, function) - {unit}
        if not own:
            continue
        value = _value(match)
        shown = " ".join(part[match.start() : stop].split()).rstrip(",:(")
        about = frozenset(own | (head - {unit}))
        yield Stated(value, unit, about, shown, frozenset(own))


def _meant(claim: Stated, told: Sequence[Stated]) -> list[Stated]:
    """What the evidence states about the claim's thing: the statements of its unit that
    share a word with it, narrowed to those whose own words (not the subject they share
    with the others) the claim says, when any does."""
    same = [s for s in told if s.unit == claim.unit and s.about & claim.about]
    if len(same) < 2:
        return same
    shared: set[str] = set(same[0].about).intersection(*(s.about for s in same[1:]))
    scores = [len((s.own - shared) & claim.own) for s in same]
    best = max(scores)
    return [s for s, n in zip(same, scores, strict=True) if n == best] if best else same


def _derived(same: Sequence[Stated]) -> set[float]:
    """What the statements a claim is compared with give in one step that is not their
    restatement: their mean, and each divided by a figure beside it (a rate). Not their
    total: a total said of one of them is a sum given as its value."""
    values = [s.value for s in same]
    out: set[float] = {sum(values) / len(values)} if len(values) >= 2 else set()
    return out | {s.value / b for s in same for b in s.beside if b}


def _excused(question: Sequence[float], evidence: Sequence[float]) -> set[float]:
    # What the question's own figures give with the evidence's in one step (4 × 85); a
    # step that gives back one of its figures (× 1, + 0) is none (`grounding._one_step`).
    out = set(question)
    for q, e in itertools.product(question, evidence):
        out |= {q * e, q + e, e - q, q - e, *([e / q] if q else [])} - {q, e}
    return out


def _near(value: float, known: set[float]) -> bool:
    return any(abs(value - k) <= 1e-9 * max(1.0, abs(k)) for k in known)


def contradictions(
    draft: str, question: str, evidence: Sequence[str], computed: Sequence[str]
) -> list[str]:
    """Each of the draft's figures the evidence states differently for the same thing, as
    "X (the evidence states Y)"."""
    lang = language(f"{question} {draft}")
    told = [s for text in evidence for s in stated(text, lang)]
    if not told:
        return []
    asked = [float(m.group(0).replace(",", "")) for m in _FIGURE.finditer(question)]
    tools = {s.value for text in computed for s in stated(text)}
    tools |= {float(m.group(0).replace(",", "")) for t in computed for m in _FIGURE.finditer(t)}
    excused = _excused(asked, [s.value for s in told]) | tools
    out: list[str] = []
    for claim in stated(draft, lang):
        same = _meant(claim, told)
        if not same or _near(claim.value, {s.value for s in same}):
            continue
        if _near(claim.value, excused) or _near(claim.value, _derived(same)):
            continue
        found = f"{claim.text} (the evidence states {same[0].text})"
        if found not in out:
            out.append(found)
    return out
