"""The rule-based fact extractor: subject - verb - object from spaCy's dependency parse.

A chunk is read by the pipeline of its language (`retrieval.graph.parse`). In each
sentence every predicate (a verb, or a noun or adjective with a copula) gives facts
from its subject to each of its objects, the relation being the verb phrase and, for an
object behind a preposition, the preposition ("Project Falcon is led by Maria Chen":
Project Falcon - is led by - Maria Chen). What the parse says decides, never the
casing: lower-case text yields facts as capitalised text does. The subject of a
relative clause is the noun it describes ("Project Falcon, which launched in 2021");
a verb joined by "and" shares its subject; a personal pronoun stands for the previous
sentence's subject. The ends are noun phrases (compounds, modifiers, numbers, "of"
parts, named entities whole), without their articles. No model call: a few milliseconds
per chunk on one core; the pipelines load once per process.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from bus.store.facts import Triple
from retrieval.graph.entities import entity_key
from retrieval.graph.parse import language_of, pipeline

if TYPE_CHECKING:
    from spacy.tokens import Span, Token

#: The most facts kept per chunk (a table or a list of names yields many).
MAX_FACTS_PER_CHUNK = 32
#: The most words an end of a fact may have.
MAX_END_WORDS = 8

_SUBJECTS = frozenset({"nsubj", "nsubjpass", "nsubj:pass", "csubj"})
_DIRECT = frozenset({"dobj", "obj", "attr", "oprd", "iobj"})
_OBLIQUE = frozenset({"obl", "obl:agent", "obl:arg", "obl:mod"})
_PREPOSITIONS = frozenset({"prep", "agent", "dative"})
_RELATIVE = frozenset({"relcl", "acl:relcl"})
_PARTICIPLE = frozenset({"acl"})
_VERB_PARTS = frozenset({"aux", "auxpass", "aux:pass", "aux:tense", "neg", "prt", "cop"})
_LEFT_MODIFIERS = frozenset(
    {"compound", "amod", "nummod", "quantmod", "poss", "nmod:poss", "nn", "npadvmod"}
)
_RIGHT_PARTS = frozenset({"flat", "flat:name", "compound", "appos", "nummod"})
_OF = frozenset({"of", "de", "d'", "du", "des"})
_DROP_EDGES = frozenset({"DET", "PUNCT", "ADP", "CCONJ", "SCONJ", "PART"})


def _is_relative(token: Token) -> bool:
    return token.tag_ in {"WDT", "WP"} or "Rel" in token.morph.get("PronType", [])


def _of_part(token: Token) -> Token | None:
    """The noun an "of"/"de" phrase under ``token`` names (en ``prep``, UD ``nmod``)."""
    for child in token.rights:
        if child.dep_ == "prep" and child.lower_ in _OF:
            objects = [c for c in child.children if c.dep_ == "pobj"]
            if objects:
                return objects[0]
        if child.dep_ == "nmod" and any(
            c.dep_ == "case" and c.lower_ in _OF for c in child.children
        ):
            return child
    return None


def _set_off(head: Token, part: Token) -> bool:
    """Is ``part`` set off from ``head`` by punctuation ("Elena Petrova, a violinist")?"""
    return any(t.is_punct for t in head.doc[head.i + 1 : part.i])


def _places(noun: Token) -> Iterable[tuple[str, Token]]:
    """The named things a noun's own prepositions lead to ("a centre in Rotterdam"), not
    its "of" part: (preposition, noun)."""
    for child in noun.rights:
        if child.dep_ == "prep" and child.lower_ not in _OF:
            for obj in child.children:
                if obj.dep_ == "pobj" and obj.pos_ == "PROPN" and noun.pos_ != "NUM":
                    yield child.lower_, obj
        elif child.dep_ == "nmod" and child.pos_ == "PROPN" and noun.pos_ != "NUM":
            case = _case(child)
            if case and case not in _OF:
                yield case, child


def _collect(token: Token, into: set[int], with_of: bool) -> None:
    into.add(token.i)
    for child in token.lefts:
        if child.dep_ in _LEFT_MODIFIERS:
            _collect(child, into, with_of=True)
    for child in token.rights:
        if child.dep_ in _RIGHT_PARTS and child.pos_ != "PRON" and not _set_off(token, child):
            _collect(child, into, with_of=True)
    part = _of_part(token) if with_of else None
    if part is not None:
        into.update(t.i for t in token.doc[token.i : part.i])
        _collect(part, into, with_of=True)


def phrase(token: Token, *, with_of: bool = True) -> str:
    """The noun phrase ``token`` heads: its modifiers and names, no article, at most
    `MAX_END_WORDS` words; a named entity it is part of is taken whole."""
    taken: set[int] = set()
    _collect(token, taken, with_of)
    if (token.ent_type_ and token.ent_type_ not in {"DATE", "TIME"}) or token.like_num:
        ent = _entity(token)
        if ent is not None:
            taken.update(range(ent.start, ent.end))
    start, end = min(taken), max(taken) + 1
    words = list(token.doc[start:end])
    while words and words[0].pos_ in _DROP_EDGES and words[0].i != token.i:
        words.pop(0)
    while words and words[-1].pos_ in _DROP_EDGES and words[-1].i != token.i:
        words.pop()
    words = words[:MAX_END_WORDS]
    return "".join(w.text_with_ws for w in words).strip()


def _entity(token: Token) -> Span | None:
    for ent in token.doc.ents:
        if ent.start <= token.i < ent.end:
            return ent
    return None


def _verb_phrase(predicate: Token) -> str:
    parts = [c for c in predicate.children if c.dep_ in _VERB_PARTS]
    words = sorted([*parts, predicate], key=lambda t: t.i)
    return " ".join(w.lower_ for w in words)


def _described(noun: Token) -> Token:
    """The thing a noun describes: "X is an app developed by Y", "Y, a startup based in Z"."""
    if noun.dep_ == "attr":
        subjects = [c for c in noun.head.children if c.dep_ in _SUBJECTS]
        return subjects[0] if subjects else noun
    if noun.dep_ == "appos":
        return noun.head
    return noun


def subjects(predicate: Token, previous: Token | None, depth: int = 0) -> list[Token]:
    """Who or what ``predicate`` is said of (a conjoined subject gives each)."""
    found = [c for c in predicate.children if c.dep_ in _SUBJECTS]
    if found and _is_relative(found[0]) and predicate.dep_ in _RELATIVE:
        found = [_described(predicate.head)]
    elif not found and depth < 3 and predicate.dep_ == "conj":
        return subjects(predicate.head, previous, depth + 1)
    elif not found and predicate.dep_ in _RELATIVE | _PARTICIPLE:
        found = [_described(predicate.head)]
    if found and found[0].pos_ == "PRON" and not _is_relative(found[0]):
        found = [previous] if previous is not None else []
    return [*found, *(c for s in found for c in s.conjuncts)]


def _case(token: Token) -> str:
    return " ".join(c.lower_ for c in token.children if c.dep_ in {"case", "mark"})


def objects(predicate: Token) -> Iterable[tuple[str, Token]]:
    """Each object of ``predicate`` with the words the relation adds for it."""
    for child in predicate.children:
        if child.dep_ in _DIRECT:
            yield "", child
        elif child.dep_ in _OBLIQUE:
            yield _case(child), child
        elif child.dep_ in _PREPOSITIONS or (child.dep_ == "acomp" and child.pos_ == "ADP"):
            for obj in child.children:
                if obj.dep_ == "pobj":
                    yield child.lower_, obj
        elif child.dep_ == "acomp":
            for part in child.children:
                if part.dep_ == "npadvmod":  # "is 1.2 km long"
                    yield child.lower_, part
                for obj in part.children if part.dep_ == "prep" else ():
                    if obj.dep_ == "pobj":
                        yield f"{child.lower_} {part.lower_}", obj


def _light_object(predicate: Token) -> Token | None:
    """A bare noun right after the verb that completes it ("takes place in", "a lieu à")
    when the verb has another object."""
    after = predicate.doc[predicate.i + 1] if predicate.i + 1 < len(predicate.doc) else None
    if (
        after is not None
        and after.head.i == predicate.i
        and after.dep_ in _DIRECT
        and after.pos_ == "NOUN"
        and not list(after.children)
        and sum(1 for _ in objects(predicate)) > 1
    ):
        return after
    return None


def _generic(token: Token) -> bool:
    """Is ``token`` quantified ("every project", "chaque équipe")? Its determiner is then
    neither an article, a demonstrative, a possessive nor a number, by its morphology: a
    sentence about every project states no fact about a particular one. (Subjects only:
    "meets every Tuesday" is a fact.)"""
    for det in token.children:
        if det.dep_ == "det" and not det.like_num:
            features = det.morph.to_dict()
            if "PronType" not in features and "Poss" not in features:
                return True
    return False


def _end(token: Token) -> bool:
    """Can ``token`` head an end of a fact (not a pronoun, not a bare function word)?"""
    return token.pos_ in {"PROPN", "NOUN", "NUM", "X", "SYM"} or token.like_num


def _triple(subject: str, relation: str, obj: str) -> Triple | None:
    s_key, o_key = entity_key(subject), entity_key(obj)
    if not s_key or not o_key or s_key == o_key or not relation:
        return None
    return Triple(subject, s_key, _kind(subject), relation, obj, o_key, _kind(obj))


def _kind(text: str) -> str:
    return "figure" if any(c.isdigit() for c in text) else "name"


def _predicate_facts(predicate: Token, previous: Token | None) -> Iterable[Triple]:
    who = [s for s in subjects(predicate, previous) if _end(s) and not _generic(s)]
    if not who:
        return
    verb = _verb_phrase(predicate)
    found: list[tuple[str, Token]] = list(objects(predicate))
    light = _light_object(predicate)
    if light is not None:
        verb = f"{verb} {light.lower_}"
        found = [(extra, obj) for extra, obj in found if obj.i != light.i]
    if predicate.pos_ in {"NOUN", "PROPN", "ADJ"}:  # UD copula: "X est la directrice de Y"
        part = _of_part(predicate)
        head = phrase(predicate, with_of=part is None)
        found = [(f"{head} {_case(part)}", part)] if part is not None else []
        verb = " ".join(c.lower_ for c in predicate.children if c.dep_ == "cop")
        if part is None:
            found = [("", predicate)]
    for extra, obj in found:
        if obj.dep_ == "attr" and (part := _of_part(obj)) is not None:
            extra, obj = f"{phrase(obj, with_of=False)} of", part
        for end in (obj, *obj.conjuncts):
            if not _end(end):
                continue
            relation = f"{verb} {extra}".strip()
            for s in who:
                fact = _triple(phrase(s), relation, phrase(end))
                if fact is not None:
                    yield fact
            for prep, place in _places(end):  # "opened a centre in Rotterdam"
                fact = _triple(phrase(end), prep, phrase(place))
                if fact is not None:
                    yield fact


def _is_predicate(token: Token) -> bool:
    if token.pos_ in {"VERB", "AUX"}:
        return not (token.pos_ == "AUX" and token.dep_ in _VERB_PARTS)
    return any(c.dep_ == "cop" for c in token.children)


def extract(text: str) -> list[Triple]:
    """The facts of a chunk of text, at most `MAX_FACTS_PER_CHUNK`, duplicates dropped
    (none when no pipeline reads its language)."""
    nlp = pipeline(language_of(text))
    if nlp is None:
        return []
    seen: set[tuple[str, str, str]] = set()
    facts: list[Triple] = []
    previous: Token | None = None
    for sentence in nlp(text).sents:
        for token in sentence:
            if not _is_predicate(token):
                continue
            for fact in _predicate_facts(token, previous):
                key = (fact.subject_key, fact.relation, fact.object_key)
                if key not in seen:
                    seen.add(key)
                    facts.append(fact)
        roots = [t for t in sentence if t.dep_ in _SUBJECTS and t.pos_ in {"PROPN", "NOUN"}]
        previous = roots[0] if roots else previous
    return facts[:MAX_FACTS_PER_CHUNK]


class RuleExtractor:
    """The `retrieval.ports.FactExtractor` without a model: dependency-parse patterns."""

    @property
    def name(self) -> str:
        """Extractor id."""
        return "rules"

    async def extract(self, texts: Sequence[str]) -> list[list[Triple]]:
        """The facts of each text, in order (parsed in a worker thread: the event loop goes
        on serving while a batch is read)."""
        return await asyncio.to_thread(lambda: [extract(t) for t in texts])
