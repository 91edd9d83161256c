"""The fact-extraction eval set and its scoring: facts a reader agrees with, facts missed.

The set ships in ``agentbus_evals/data/fact_eval.json``: short passages in English, French,
Spanish, Portuguese and German, each with the facts a reader would extract from it as
(subject, relation, object). A gold relation lists the wordings a reader accepts,
separated by ``|``; a passage's ``also`` holds true facts a reader accepts but need not
list. Every passage belongs to a half: ``dev`` (what the rules and the prompt were written
against) or ``test`` (only run; the figures docs/evals.md gives).

An extracted fact is one *a reader agrees with* when it matches a gold (or ``also``) fact:

* each end names the same thing: one end's words (stop words aside) hold all of the
  other's, and the shorter holds at least half of the longer's, so "Maria Chen" is "Chen" and "the
  Oslo office" is "Oslo office", but "Kestrel" is not "Kestrel Labs Oslo office";
* the relation says the same: it shares a content lemma (simplemma, in the passage's
  language; spaCy's stop words left out) with one of the accepted wordings (a
  non-English passage's facts accept English wordings too), or, for a
  wording of function words alone ("in", "is"), a word;
* ends may be swapped when the relation matches ("X leads Y" for "Y is led by X").

Precision is the share of extracted facts a reader agrees with; recall the share of gold
facts matched by at least one extracted fact.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

import simplemma
from pydantic import BaseModel, ConfigDict

from bus.store.facts import Triple
from retrieval.graph.entities import entity_key

Half = Literal["dev", "test"]
_DATA = Path(__file__).parent / "data" / "fact_eval.json"
_STOP_MODULES = {
    "en": "spacy.lang.en.stop_words",
    "fr": "spacy.lang.fr.stop_words",
    "es": "spacy.lang.es.stop_words",
    "pt": "spacy.lang.pt.stop_words",
    "de": "spacy.lang.de.stop_words",
}


class Passage(BaseModel):
    """A passage and the facts a reader would extract from it."""

    model_config = ConfigDict(frozen=True)

    id: str
    half: Half
    lang: str
    text: str
    facts: list[tuple[str, str, str]]
    also: list[tuple[str, str, str]] = []


def load_passages(half: Half | None = None, path: Path | None = None) -> list[Passage]:
    """The shipped passages (or another file's), of one half or both."""
    doc = json.loads((path or _DATA).read_text(encoding="utf-8"))
    passages = [Passage.model_validate(p) for p in doc["passages"]]
    return [p for p in passages if half is None or p.half == half]


@cache
def _stop_words(lang: str) -> frozenset[str]:
    module = _STOP_MODULES.get(lang)
    if module is None:
        return frozenset()
    words: set[str] = importlib.import_module(module).STOP_WORDS
    return frozenset(words)


def _lemmas(text: str, lang: str) -> set[str]:
    words = [w.lower() for w in simplemma.simple_tokenizer(text) if any(c.isalnum() for c in w)]
    return {simplemma.lemmatize(w, lang=lang).lower() for w in words} | set(words)


def _words(end: str, lang: str) -> set[str]:
    stop = _stop_words(lang)
    words = set(entity_key(end).split())
    return {w for w in words if w not in stop} or words


def same_thing(extracted: str, gold: str, lang: str = "en") -> bool:
    """Do two ends name the same thing (see the module docstring)? Articles and other
    stop words of the passage's language do not count."""
    a, b = _words(extracted, lang), _words(gold, lang)
    if not a or not b:
        return False
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    return short <= long and 2 * len(short) >= len(long)


def same_relation(extracted: str, gold: str, lang: str) -> bool:
    """Does an extracted relation say what one of the gold wordings says?"""
    stop = _stop_words(lang)
    said = _lemmas(extracted, lang)
    for wording in gold.split("|"):
        accepted = _lemmas(wording, lang)
        content = {w for w in accepted if w not in stop}
        if (content and said & content) or (not content and said & accepted):
            return True
    return False


def _matches(fact: Triple, gold: tuple[str, str, str], lang: str) -> bool:
    subject, relation, obj = gold
    if not same_relation(fact.relation, relation, lang):
        return False
    forward = same_thing(fact.subject, subject, lang) and same_thing(fact.object, obj, lang)
    return forward or (
        same_thing(fact.subject, obj, lang) and same_thing(fact.object, subject, lang)
    )


@dataclass(frozen=True, slots=True)
class PassageScore:
    """One passage's extracted facts, which a reader agrees with, which gold facts were found."""

    passage: str
    extracted: int
    agreed: int
    gold: int
    found: int
    wrong: list[str]
    missed: list[str]


def score_passage(passage: Passage, facts: Sequence[Triple]) -> PassageScore:
    """How the facts extracted from one passage compare with what a reader extracts."""
    accepted = [*passage.facts, *passage.also]
    wrong = [
        f"{f.subject} | {f.relation} | {f.object}"
        for f in facts
        if not any(_matches(f, g, passage.lang) for g in accepted)
    ]
    missed = [
        " | ".join(g) for g in passage.facts if not any(_matches(f, g, passage.lang) for f in facts)
    ]
    return PassageScore(
        passage.id,
        len(facts),
        len(facts) - len(wrong),
        len(passage.facts),
        len(passage.facts) - len(missed),
        wrong,
        missed,
    )


@dataclass(frozen=True, slots=True)
class SetScore:
    """Precision (facts a reader agrees with) and recall (gold facts found) over passages."""

    precision: float
    recall: float
    extracted: int
    agreed: int
    gold: int
    found: int

    @property
    def f1(self) -> float:
        """The harmonic mean of precision and recall."""
        total = self.precision + self.recall
        return 2 * self.precision * self.recall / total if total else 0.0


def score_set(scores: Sequence[PassageScore]) -> SetScore:
    """The set's precision and recall (an extractor that finds nothing has precision 0)."""
    extracted = sum(s.extracted for s in scores)
    agreed = sum(s.agreed for s in scores)
    gold = sum(s.gold for s in scores)
    found = sum(s.found for s in scores)
    return SetScore(
        agreed / extracted if extracted else 0.0,
        found / gold if gold else 0.0,
        extracted,
        agreed,
        gold,
        found,
    )
