"""The draft's claims, each beside the evidence it is about: what a judge compares.

A judge model reading a whole draft against whole passages misses that "40 minutes" and "35
minutes" are about the same thing (made up, as every example here); set side by side, one
claim and one evidence sentence, the comparison is the whole task. Each sentence of the
draft (its citation markers left out) is a claim; its evidence is the sentence of the
evidence that shares the most content words with it (lemmas,
`agents.understanding.language.words`), all their words (function words too) breaking a tie, then
the question's words, as what the draft answers; and within that sentence its conjunct
most about the claim (`agents.understanding.language.clauses`: the one stating a figure,
date or name the claim states, else the one sharing most of its words) is the quote a flag
stands on ("the last at 21:45" of "the first ferry leaves at 06:15 and the last at 21:45").
A claim that shares no content word with any evidence sentence is given none. The pairing is
code; what the model says of each pair is the judge's (`agents.checks.claim_verdicts`). The
examples are made up, no case of an eval set.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agents.understanding.claims import grounding
from agents.understanding.language import clauses, names
from agents.understanding.language.numbers import CITATION
from agents.understanding.language.words import content_set, language, lemma, words

#: At most this many claims of a draft are set beside the evidence (a judge's prompt
#: stays small; a longer draft's first claims).
MAX_PAIRS = 4
#: How the judge's prompt labels a claim, the evidence beside it, and evidence there is
#: none of: the prompt's words, which a judge's reason never shows
#: (`agents.checks.verdicts.without_scaffolding`).
SAID = "The draft says:"
TOLD = "The evidence says:"
NOTHING = "(nothing about this)"


@dataclass(frozen=True, slots=True)
class Pair:
    """A claim of the draft, the evidence sentence about it ('' for none), and the part of
    that sentence most about the claim (the words a flag quotes)."""

    claim: str
    evidence: str
    quote: str


def _lemmas(text: str, lang: str) -> set[str]:
    """Every word's lemma, function words too: a tie of content words ("the free plan" and
    "the Pro plan" for "per second") is broken by the rest."""
    return {lemma(w, lang) for w in words(text)}


def _stated(text: str) -> set[str]:
    """The figures and dates ``text`` states, as comparable strings."""
    figures, dates = grounding.values(text)
    return {f"{v:g}" for v in figures} | dates


def _named(text: str, lang: str) -> set[str]:
    return {n.casefold() for n in names.spans(text, lang)}


def _quote(sentence: str, claim: str, lang: str) -> str:
    """The conjunct of ``sentence`` about ``claim``: the one that states most of the claim's
    figures and dates, then of its names, then of its words (the whole sentence
    when it has one conjunct, or none shares anything)."""
    parts = [sentence[a:b].strip(" ,;:") for a, b in clauses.conjuncts(sentence, lang)]
    parts = [p for p in parts if p]
    if len(parts) < 2:
        return sentence
    said, stated, named = content_set(claim, lang), _stated(claim), _named(claim, lang)
    every = _lemmas(claim, lang)
    scores = [
        (
            len(_stated(p) & stated),
            len(_named(p, lang) & named),
            len(content_set(p, lang) & said),
            len(_lemmas(p, lang) & every),
        )
        for p in parts
    ]
    best = max(scores)
    return parts[scores.index(best)] if best > (0, 0, 0, 0) else sentence


def pairs(question: str, draft: str, evidence: Sequence[str]) -> list[Pair]:
    """The draft's claims (at most :data:`MAX_PAIRS`), each with the evidence sentence
    about it and the quote within it."""
    lang = language(f"{question} {draft}")
    asked, asked_all = content_set(question, lang), _lemmas(question, lang)
    told = [" ".join(s.split()) for text in evidence for s in clauses.sentences(text)]
    content = [content_set(s, lang) for s in told]
    every = [_lemmas(s, lang) for s in told]
    out: list[Pair] = []
    for sentence in clauses.sentences(CITATION.sub(" ", draft)):
        claim = " ".join(sentence.split()).strip(" ,;:")
        said, said_all = content_set(claim, lang), _lemmas(claim, lang)
        if not said:
            continue
        scores = [
            (len(c & said), len(e & said_all), len(c & asked), len(e & asked_all))
            if c & said
            else (0, 0, 0, 0)
            for c, e in zip(content, every, strict=True)
        ]
        best = max(scores, default=(0, 0, 0, 0))
        if best == (0, 0, 0, 0):
            out.append(Pair(claim, "", ""))
        else:
            where = told[scores.index(best)]
            out.append(Pair(claim, where, _quote(where, claim, lang)))
        if len(out) == MAX_PAIRS:
            break
    return out


def shown(found: Sequence[Pair]) -> str:
    """The pairs as a judge reads them: numbered, the draft's claim, then the evidence."""
    lines: list[str] = []
    for i, pair in enumerate(found, start=1):
        lines.append(f"{i}. {SAID} {pair.claim}")
        lines.append(f"   {TOLD} {pair.evidence or NOTHING}")
    return "\n".join(lines)
