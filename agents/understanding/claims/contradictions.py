"""A figure the evidence states differently for the same thing: a contradiction, no model.

"12 rooms on the first floor" against a floor plan's "21 rooms on the first floor" (the
examples are made up, no case of an eval set): the same unit and the same words after it,
another number. Numbers written in words count ("twelve rooms"), and words are compared as
lemmas in the text's language. The draft's figure being one arithmetic step from two of
the evidence's figures (21 - 9, the "9 suites" of another sentence) does not excuse it:
that leniency (`agents.understanding.claims.grounding`) is for results the question asks
to compute, and a question that gives a figure (a 4-night stay: 4 × 85) or a tool's
result still excuses one. A figure followed by a comparison ("3 rooms more than") is a
difference, never a restatement, and is left alone. Unlike the other grounding checks
this one runs whether or not the draft cites: the draft contradicts what the run read
either way.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from agents.understanding.language.numbers import CITATION, with_digits
from agents.understanding.language.words import function_words, language, lemma

# A number that is neither part of a clock time, a date, a version ("1.4.2") nor a word.
_FIGURE = re.compile(r"(?<![\w.:/-])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\d:]|\.\d|-\d)")
_CLAUSE = re.compile(r"[.;!?]\s+|[.;!?]$|\n+")
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
    """A figure with what it counts: its unit and the words that follow in its clause."""

    value: float
    unit: str
    about: frozenset[str]
    text: str


def stated(text: str, lang: str | None = None) -> Iterator[Stated]:
    """The figures of ``text`` that come with a unit, each with the words that follow it.

    Numbers written in words count ("twenty-seven days"); words are compared as lemmas
    ("holidays" is "holiday"), and the language's function words name no thing.
    """
    lang = lang or language(text)
    function = function_words(lang)
    for clause in _CLAUSE.split(with_digits(CITATION.sub(" ", text), lang)):
        matches = list(_FIGURE.finditer(clause))
        for match, after in itertools.zip_longest(matches, matches[1:]):
            if match is None:
                continue
            end = after.start() if after is not None else len(clause)
            words = _WORD.findall(clause[match.end() : end])[: 1 + TAIL_WORDS]
            if not words or any(w.lower() in _COMPARING for w in words):
                continue
            about = frozenset(lemma(w, lang) for w in words[1:] if w.lower() not in function)
            if not about:
                continue
            value = float(match.group(0).replace(",", ""))
            shown = " ".join(clause[match.start() : end].split()).rstrip(",:(")
            yield Stated(value, lemma(words[0], lang), about, shown)


def _excused(question: Sequence[float], evidence: Sequence[float]) -> set[float]:
    # What the question's own figures give with the evidence's in one step (4 × 85).
    out = set(question)
    for q, e in itertools.product(question, evidence):
        out |= {q * e, q + e, e - q, q - e, *([e / q] if q else [])}
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
        same = [s for s in told if s.unit == claim.unit and s.about & claim.about]
        if not same or _near(claim.value, {s.value for s in same}):
            continue
        if _near(claim.value, excused):
            continue
        found = f"{claim.text} (the evidence states {same[0].text})"
        if found not in out:
            out.append(found)
    return out
