"""The rule-based fact extractor: subject - relation - object patterns over sentences.

In each sentence the entities (`retrieval.graph.entities.mentions`: capitalised names,
figures with units) are found in order; two neighbours joined by a short lower-case
phrase make a fact, the phrase its relation ("Project Falcon is led by Maria Chen").
A phrase that opens with "and" or a comma after a verb-less list carries on from the
sentence's subject instead ("Maria Chen joined Initech in 2019 and moved to Oslo" gives
Maria Chen - moved to - Oslo). No model, no I/O: about a millisecond per chunk.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

from bus.store.facts import Triple
from retrieval.graph.entities import Mention, entity_key, mentions, sentences

#: The most words a relation phrase may have.
MAX_RELATION_WORDS = 6
#: The most facts kept per chunk (a table or a list of names yields many pairs).
MAX_FACTS_PER_CHUNK = 32
_WORD = re.compile(r"[^\W\d_][\w'’-]*|\d+")
_CONNECTORS = frozenset({"and", "or", "but", "as", "well", "also", "then", "which", "who"})
_ARTICLES = frozenset({"a", "an", "the"})
_TIME_PREPOSITIONS = frozenset({"in", "on", "since", "by", "until", "from", "for"})
_CARRY = re.compile(r"^\s*(?:,\s*)?(?:and|but|while|then)\s+", re.IGNORECASE)


def _relation(between: str) -> str | None:
    """The relation a phrase between two entities states, or None if it is not one."""
    if any(stop in between for stop in (";", ":", "(", ")", "\n", "?")):
        return None
    words = _WORD.findall(between)
    if not words or len(words) > MAX_RELATION_WORDS:
        return None
    if any(w[0].isupper() for w in words):  # a name the mention finder left out
        return None
    words = [w.lower() for w in words]
    while words and words[-1] in _ARTICLES:  # "moved to the" Oslo office
        words.pop()
    if all(w in _CONNECTORS | _ARTICLES for w in words) or words[-1] in _CONNECTORS:
        return None
    return " ".join(words)


_APPOSITION = re.compile(r"^\s*,(?!\s*(?:a|an|the)\b)\s*", re.IGNORECASE)


def _closes_apposition(between: str) -> re.Match[str] | None:
    """A comma right after an entity, not opening "a/an/the ..." (which describes it)."""
    return _APPOSITION.match(between)


def _triple(subject: Mention, relation: str, obj: Mention) -> Triple | None:
    s_key, o_key = entity_key(subject.text), entity_key(obj.text)
    if not s_key or not o_key or s_key == o_key:
        return None
    return Triple(subject.text, s_key, subject.kind, relation, obj.text, o_key, obj.kind)


def sentence_facts(sentence: str) -> list[Triple]:
    """The facts one sentence states."""
    found = mentions(sentence)
    facts: list[Triple] = []
    subject = found[0] if found and found[0].kind == "name" else None
    for prev, cur in itertools.pairwise(found):
        between = sentence[prev.end : cur.start]
        last = facts[-1] if facts else None
        prep = between.strip().lower()
        if (
            cur.kind == "figure"
            and prep in _TIME_PREPOSITIONS
            and last is not None
            and subject is not None
            and last.subject == subject.text
            and last.object == prev.text
        ):
            # "X joined Y in 2017": when X joined, not a fact about Y.
            fact = _triple(subject, f"{last.relation} {prep}", cur)
            if fact is not None:
                facts.append(fact)
            continue
        carried = _CARRY.match(between) or _closes_apposition(between)
        if subject is not None and subject is not prev and (carried or prev.kind == "figure"):
            # "X joined Y in 2019 and moved to Z", "X, based in Y, employs N": X's facts.
            rest = between[carried.end() :] if carried else between.strip(" ,")
            relation = _relation(rest)
            fact = _triple(subject, relation, cur) if relation else None
        else:
            relation = _relation(between.strip(" ,"))
            fact = _triple(prev, relation, cur) if relation else None
            if fact is None and relation and subject is not None and subject is not prev:
                fact = _triple(subject, relation, cur)
        if fact is not None:
            facts.append(fact)
    return facts


def extract(text: str) -> list[Triple]:
    """The facts of a chunk of text, at most `MAX_FACTS_PER_CHUNK`, duplicates dropped."""
    seen: set[tuple[str, str, str]] = set()
    facts: list[Triple] = []
    for sentence in sentences(text):
        for fact in sentence_facts(sentence):
            key = (fact.subject_key, fact.relation, fact.object_key)
            if key in seen:
                continue
            seen.add(key)
            facts.append(fact)
            if len(facts) >= MAX_FACTS_PER_CHUNK:
                return facts
    return facts


class RuleExtractor:
    """The default `retrieval.ports.FactExtractor`: sentence patterns, no model."""

    @property
    def name(self) -> str:
        """Extractor id."""
        return "rules"

    async def extract(self, texts: Sequence[str]) -> list[list[Triple]]:
        """The facts of each text, in order."""
        return [extract(t) for t in texts]
