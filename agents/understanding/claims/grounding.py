"""Evidence grounding by rules: what a draft built on the evidence states beyond it.

A draft that answers from the documents (it cites them, or the question asks about them)
should state only what the evidence holds or a tool computed. Checks, no model (the
examples are made up for this page, no case of an eval set):

- every figure the draft states (a number, a clock time, a duration, a date) is in the
  question, the evidence, a tool's result (the researcher's or the fact-check's), or one
  arithmetic step from them: a figure of the question times, plus or minus one of the
  evidence; the difference or the quotient of two figures of the evidence (a rate: "84 km
  in 7 days" is 12 km a day); the mean of a series the evidence lists, and its total and
  count when the draft states both, a rate written out ("15 a week: 45 over 3 weeks" of
  weekly figures 15, 10 and 20). A total stated alone is not excused: "45 a week on
  average" is a sum given as a mean;
- no clause of the draft is mostly words that appear nowhere in the question or the
  evidence ("refunds are paid by the regional office", of a shop's opening hours);
- a figure or a name the draft takes from the evidence comes from the clause the question
  is about: when another clause of the evidence matches the question's words better and
  holds a figure or name the draft does not state, the draft took the wrong one
  ("gate 14" from "the cargo terminal uses gate 14" for the passenger terminal's gate);
- a sentence the draft restates from the evidence keeps the evidence's limit or condition
  (``up to``, ``shorter than``, ``only``...), unless the question already names it: "Yes,
  helmets are lent" drops "to members only".

Whether or not it cites, a figure the evidence states differently for the same thing
("12 rooms on the first floor" against "21 rooms on the first floor") is a contradiction
(`agents.understanding.claims.contradictions`).

A draft that answers a question about the documents without any passage of them (the
researcher fetched a web page instead) is unsupported whatever it says. What fails is a
mismatch, as a refuted recompute is: the judge's verdict becomes a revision
and the reasons tell the researcher what to drop or look up.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence

from agents.understanding.claims.contradictions import contradictions, stated
from agents.understanding.claims.ports import CheckedClaim
from agents.understanding.language.limits import limits
from agents.understanding.language.names import documents, spans
from agents.understanding.language.numbers import ALONE_BELOW, CITATION, with_digits
from agents.understanding.language.words import (
    MIN_LENGTH,
    content_set,
    content_words,
    language,
    lemma,
    words,
)
from bus import written_times

_NUMBER = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:\s*%)?")
_SENTENCE = re.compile(r"[.;!?]\s+|[.;!?]$|\n+")
_CLAUSE = re.compile(r"[.;!?]\s+|[.;!?]$|\n+|,\s+(?:and|but|while|whereas)\s+")
MIN_UNSUPPORTED_WORDS = 3
UNSUPPORTED_SHARE = 0.6


def _said(text: str, lang: str) -> set[str]:
    """The lemmas of the content words of ``text`` (`agents.understanding.language.words`)."""
    return content_set(text, lang)


def _lemmas(text: str, lang: str) -> set[str]:
    """The lemmas of every word of ``text`` (function words too: "last" tells trains apart)."""
    return {lemma(w, lang) for w in words(text) if len(w) >= MIN_LENGTH}


def _language(question: str, draft: str) -> str:
    return language(f"{question} {draft}")


def applies(question: str, draft: str, evidence: Sequence[str]) -> bool:
    """Whether the draft answers from the evidence: there is some, and the draft cites it
    or the question asks about the documents."""
    if not any(e.strip() for e in evidence):
        return False
    return bool(CITATION.search(draft)) or documents(question, language(question))


def _stated(
    text: str, parts: bool = False, alone_below: float = ALONE_BELOW
) -> tuple[list[tuple[float, str]], set[str]]:
    """((value, as written) per figure, dates): see :func:`values`."""
    text = with_digits(CITATION.sub(" ", text), alone_below=alone_below)
    found_dates = {d.isoformat() for d in written_times.dates(text)}
    text = written_times.ISO_DATE.sub(" ", text)
    figures: list[tuple[float, str]] = []
    for match in written_times.DURATION.finditer(text):
        hours, minutes = match.group(1), match.group(2)
        figures.append((written_times.duration_minutes(match), match.group(0)))
        if parts:
            figures += [(float(hours), hours), *([(float(minutes), minutes)] if minutes else [])]
    text = written_times.DURATION.sub(" ", text)
    for match in written_times.CLOCK.finditer(text):
        minutes = written_times.clock_minutes(match)
        if minutes is not None:
            figures.append((minutes, match.group(0).strip()))
    text = written_times.CLOCK.sub(" ", text)
    for match in _NUMBER.finditer(text):
        raw = match.group(0)
        value = float(raw.rstrip("% ").replace(",", ""))
        figures.append((value, raw))
        if raw.endswith("%"):
            figures.append((value / 100, raw))
    return figures, found_dates


def values(
    text: str, parts: bool = False, alone_below: float = ALONE_BELOW
) -> tuple[set[float], set[str]]:
    """(figures, dates) a text states: numbers (a percentage also as a fraction), clock
    times and durations in minutes, ISO dates; citation markers are not figures. With
    ``parts`` (a source, not the draft), a duration's hours and minutes count on their own
    too ("6 hours" holds 6 as well as 360); ``alone_below`` is the smallest number written
    alone in words that counts (`agents.understanding.language.numbers`)."""
    figures, found_dates = _stated(text, parts, alone_below)
    return {v for v, _ in figures}, found_dates


def _one_step(question: set[float], evidence: set[float]) -> set[float]:
    """What one arithmetic step from two figures gives: a new figure. A step that gives
    back one of its own figures (adding a zero, multiplying by one) is none: a source that
    states a 0 ("+00:00" in a tool's reply) would otherwise make every figure of the
    evidence a result, and one taken from the wrong clause would pass as computed."""
    out: set[float] = set()
    for q, e in itertools.product(question, evidence):
        found = {q * e, q + e, e - q, q - e}
        if q:
            found.add(e / q)
        if e:
            found.add(q / e)
        out |= found - {q, e}
    for a, b in itertools.combinations(evidence, 2):
        found = {abs(a - b), (a - b) % 1440, (b - a) % 1440}
        # A rate: "84 km in 7 days" is 12 km a day.
        found |= {a / b} if b else set()
        found |= {b / a} if a else set()
        out |= found - {a, b}
    return out


def _plain_numbers(text: str) -> list[float]:
    """The plain numbers of ``text`` in order: no clock time, duration, ISO date or
    percentage (a series of counts or amounts, not of times)."""
    text = with_digits(CITATION.sub(" ", text))
    for pattern in (written_times.ISO_DATE, written_times.DURATION, written_times.CLOCK):
        text = pattern.sub(" ", text)
    return [
        float(m.group(0).replace(",", ""))
        for m in _NUMBER.finditer(text)
        if not m.group(0).endswith("%")
    ]


def series(evidence: Sequence[str]) -> list[list[float]]:
    """The series the evidence lists: the plain numbers of one of its sentences, of one
    whole text (a list or a table, one line a value), and the figures of one text said
    with one unit ("140 litres", "95 litres")."""
    out: list[list[float]] = []
    for text in evidence:
        out += [_plain_numbers(text), *map(_plain_numbers, _SENTENCE.split(text))]
        units: dict[str, list[float]] = {}
        for figure in stated(text):
            units.setdefault(figure.unit, []).append(figure.value)
        out += units.values()
    return [s for s in out if len(s) >= 2]


def aggregates(evidence: Sequence[str]) -> set[float]:
    """The mean of each of the evidence's :func:`series`: one step from it, as a difference
    is from two figures. Its total is not: a total stated alone is as often a sum given as
    an average ("60 a day on average" of five days that sum to 60) as it is asked for."""
    return {sum(s) / len(s) for s in series(evidence)}


def _written_out(figures: set[float], evidence: Sequence[str]) -> set[float]:
    """The total and the count of each series the draft states both of: a rate written
    out ("480 litres over 4 weeks"), its working. Either alone is not excused: any small
    number is the length of some list, and a total alone may be a sum given as a mean."""
    out: set[float] = set()
    for s in series(evidence):
        total, count = sum(s), float(len(s))
        if _held(total, figures) and _held(count, figures):
            out |= {total, count}
    return out


def excused(
    question: str,
    evidence: Sequence[str],
    computed: Sequence[str],
    stated: Iterable[float] = (),
) -> set[float]:
    """The figures a draft may state beyond the evidence's own: the question's, what a
    tool computed, and one arithmetic step from the question's and evidence's figures
    (:func:`aggregates` among them); with the draft's ``stated`` figures, the total and
    count of a series it writes a rate out with (:func:`_written_out`)."""
    asked, _ = values(question, parts=True)
    held = {v for text in evidence for v in values(text, parts=True)[0]}
    tools = {v for text in computed for v in values(text, parts=True)[0]}
    out = asked | tools | _one_step(asked, held) | aggregates(evidence)
    return out | _written_out(set(stated), evidence)


def held(value: float, known: Iterable[float]) -> bool:
    """Whether ``value`` is one of ``known`` (to rounding)."""
    return _held(value, known)


def _held(value: float, known: Iterable[float]) -> bool:
    return any(abs(value - k) <= max(1e-6, 1e-9 * abs(k)) for k in known)


def unsupported_figures(
    draft: str, question: str, evidence: Sequence[str], computed: Sequence[str]
) -> list[str]:
    """The draft's figures and dates that nothing it may rest on holds (see the module)."""
    written, stated_dates = _stated(draft)
    asked, asked_dates = values(question, parts=True)
    held: set[float] = set()
    held_dates = set(asked_dates)
    for text in evidence:
        figures, found = values(text, parts=True)
        held |= figures
        held_dates |= found
    tools: set[float] = set()
    for text in computed:
        figures, found = values(text, parts=True)
        tools |= figures
        held_dates |= found
    known = asked | held | tools
    derived = _one_step(asked, held) | aggregates(evidence)
    derived |= _written_out({v for v, _ in written}, evidence)
    out: list[str] = []
    for value, raw in written:
        if not (_held(value, known) or _held(value, derived)) and raw.strip() not in out:
            out.append(raw.strip())
    out += sorted(stated_dates - held_dates)
    return out


def _shown(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:g}"


def unsupported_clauses(draft: str, question: str, evidence: Sequence[str]) -> list[str]:
    """Clauses of the draft whose words are mostly absent from the question and evidence."""
    lang = _language(question, draft)
    known = {w for text in (question, *evidence) for w in _said(text, lang)}
    out: list[str] = []
    for clause in _CLAUSE.split(CITATION.sub(" ", draft)):
        words = content_words(clause, lang)
        missing = [w for w in words if w not in known]
        if len(missing) >= MIN_UNSUPPORTED_WORDS and len(missing) >= UNSUPPORTED_SHARE * len(words):
            out.append(" ".join(clause.split()))
    return out


_EVIDENCE_CLAUSE = re.compile(r"[.;!?]\s+|[.;!?]$|\n+|,?\s+and\s+|,\s+")


def _tokens(text: str, lang: str) -> set[str]:
    """The figures and names a clause holds, as comparable strings (names as written,
    `agents.understanding.language.names`). A name counts when it has two words or more
    ("Mirela Okafor"): one word alone (a country, a city) is as often what an answer is
    about as where it came from."""
    figures, found = values(text)
    return {_shown(v) for v in figures} | found | {n for n in spans(text, lang) if " " in n}


def _overlap(clause: str, asked: set[str], lang: str) -> int:
    return len(_said(clause, lang) & asked)


def misattributed(
    draft: str, question: str, evidence: Sequence[str], computed: Sequence[str]
) -> list[str]:
    """Figures and names the draft took from an evidence clause the question is not about.

    Returns one "X (the evidence gives Y for this)" per token so taken. A token a tool
    computed, or one arithmetic step from the sources gives, is left alone: it may be a
    result that happens to appear elsewhere.
    """
    lang = _language(question, draft)
    asked = _said(question, lang)
    if not asked:
        return []
    clauses = [c for text in evidence for c in _EVIDENCE_CLAUSE.split(text) if c.strip()]
    scored = [(_overlap(c, asked, lang), _tokens(c, lang)) for c in clauses]
    if not scored:
        return []
    best = max(score for score, _ in scored)
    if best == 0:
        return []
    # A clause that names something the question asks about and the best clause does not
    # ("the late show at 21:30" for the late show, beside "the early show opens at 18:00") is
    # about what was asked too, however few words it shares with the question.
    # (A word in half the clauses or more tells none apart: "the", "der", "le".)
    lemmas = [_lemmas(c, lang) for c in clauses]
    every = {w for c in lemmas for w in c}
    common = {w for w in every if 2 * sum(w in c for c in lemmas) >= len(lemmas)}
    best_words = {
        w for (score, _), c in zip(scored, lemmas, strict=True) if score == best for w in c
    }
    distinct = _lemmas(question, lang) - best_words - common
    scored = [
        (best if c & distinct else score, tokens)
        for c, (score, tokens) in zip(lemmas, scored, strict=True)
    ]
    said = _tokens(CITATION.sub(" ", draft), lang)
    q_figures, _ = values(question)
    e_figures = {v for text in evidence for v in values(text)[0]}
    c_figures = {v for text in computed for v in values(text)[0]}
    derived = _one_step(q_figures, e_figures) | aggregates(evidence) | c_figures | q_figures
    wanted = [t for score, tokens in scored if score == best for t in tokens]
    out: list[str] = []
    for token in sorted(said):
        homes = [score for score, tokens in scored if token in tokens]
        if not homes or max(homes) >= best:
            continue
        try:
            if _held(float(token), derived):
                continue
        except ValueError:
            pass
        kind_number = _is_number(token)
        missing = [t for t in wanted if t not in said and _is_number(t) == kind_number]
        if missing:
            out.append(f"{token} (the evidence gives {missing[0]} for this)")
    return out


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


MIN_RESTATED = 3


def dropped_caveats(draft: str, question: str, evidence: Sequence[str]) -> list[str]:
    """Limits and conditions of the evidence a sentence of the draft restates without any
    (each language's limit words, `agents.understanding.language.limits`), unless the
    question states one.

    Returns one "'caveat' (evidence sentence)" per sentence so restated.
    """
    out: list[str] = []
    sentences = [c.strip() for text in evidence for c in _SENTENCE.split(text) if c.strip()]
    lang = _language(question, draft)
    for clause in _SENTENCE.split(CITATION.sub(" ", draft)):
        said = _said(clause, lang)
        for sentence in sentences:
            words = _said(sentence, lang)
            shared = said & words
            if len(shared) < MIN_RESTATED or 2 * len(shared) < len(words):
                continue
            stated = limits(sentence, lang)
            if stated and not (limits(clause, lang) or limits(question, lang)):
                found = f"{stated[0]!r} ({' '.join(sentence.split())})"
                if found not in out:
                    out.append(found)
    return out


UNREAD = (
    "the question asks about the documents, and the draft rests on no passage of them; "
    "search the documents (search_docs) and answer from what they say, or say they do not say"
)


def checked(
    draft: str,
    question: str,
    evidence: Sequence[str],
    computed: Sequence[str],
    *,
    read_documents: bool = True,
) -> list[CheckedClaim]:
    """The grounding checks' findings, each a claim the evidence does not support, with
    the reason a revision gives for it (empty: nothing found).

    ``read_documents``: whether any of the evidence came from the documents. A draft that
    answers a question about them without it is unsupported whatever it says.
    """
    if not read_documents and draft.strip() and documents(question, language(question), owned=True):
        return [CheckedClaim(claim=draft.strip()[:160], standing="absent", reason=UNREAD)]
    out = [
        CheckedClaim(
            claim=found,
            standing="contradicted",
            reason=f"the draft states {found}: the evidence contradicts it; answer with what "
            "the evidence states",
        )
        for found in contradictions(draft, question, evidence, computed)
    ]
    if not applies(question, draft, evidence):
        return out
    figures = unsupported_figures(draft, question, evidence, computed)
    if figures:
        out.append(
            CheckedClaim(
                claim=", ".join(figures),
                standing="absent",
                reason=f"the draft states {', '.join(figures)}, which neither the evidence "
                "nor the question holds and no tool computed; state only what the evidence "
                "holds, or compute it with the calculator from the evidence's figures",
            )
        )
    for taken in misattributed(draft, question, evidence, computed):
        out.append(
            CheckedClaim(
                claim=taken,
                standing="contradicted",
                reason=f"the draft states {taken}: it took that from a part of the evidence "
                "about something else; answer with what the evidence says about what was asked",
            )
        )
    for caveat in dropped_caveats(draft, question, evidence):
        out.append(
            CheckedClaim(
                claim=caveat,
                standing="contradicted",
                reason=f"the draft drops the evidence's limit {caveat}; state it with the answer",
            )
        )
    for clause in unsupported_clauses(draft, question, evidence):
        out.append(
            CheckedClaim(
                claim=clause,
                standing="absent",
                reason=f"the evidence does not hold this claim of the draft: {clause!r}; drop "
                "it, or say the documents do not say",
            )
        )
    return out


def mismatches(
    draft: str,
    question: str,
    evidence: Sequence[str],
    computed: Sequence[str],
    *,
    read_documents: bool = True,
) -> list[str]:
    """:func:`checked`'s findings as reasons for a revision (empty: nothing found)."""
    found = checked(draft, question, evidence, computed, read_documents=read_documents)
    return [c.reason for c in found]
