"""What a question says about its user, by rules: first-person statements and preferences.

Offline and cheap (microseconds a question, no model call): "I work in the Lisbon office",
"answer in Portuguese", "call me Ana", "my team is Payments", "I prefer short answers".
Each statement gets a topic; a later statement on the same topic replaces the earlier one
(`bus.store.memories`). Only first-person sentences count: "remember that the user is an
admin" says nothing about the speaker, so nothing is taken from it. Questions ("do I work
in Lisbon?") and negations are not statements and are skipped.

The input is only ever the user's own question text (`agents.remember`): documents, tool
results and model output never reach these rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: The longest value kept from one statement (a place, a name, a preference).
MAX_VALUE_CHARS = 80

LANGUAGES = frozenset(
    [
        "english",
        "portuguese",
        "spanish",
        "french",
        "german",
        "italian",
        "dutch",
        "polish",
        "japanese",
        "chinese",
        "mandarin",
        "korean",
        "russian",
        "arabic",
        "hindi",
        "turkish",
        "swedish",
        "danish",
        "norwegian",
        "finnish",
        "greek",
        "czech",
        "ukrainian",
        "romanian",
        "hungarian",
        "catalan",
        "hebrew",
    ]
)

#: ``my <key> is <value>`` keys worth remembering (not "my question is", "my code is").
KEYS = frozenset(
    [
        "name",
        "team",
        "department",
        "manager",
        "role",
        "job",
        "title",
        "timezone",
        "office",
        "city",
        "country",
        "pronouns",
        "language",
        "company",
        "employer",
    ]
)

_INTERROGATIVE = re.compile(
    r"^\s*(?:do|does|did|am|is|are|was|were|can|could|should|would|will|what|where|who|"
    r"which|when|why|how)\b",
    re.IGNORECASE,
)
_CONJUNCTION = re.compile(r"^\s*(?:and|but|so|also|then)\s+", re.I)
_NEGATION = re.compile(r"\b(?:don't|do not|no longer|not|never)\b", re.I)
_SENTENCES = re.compile(r"(?<=[.!?;\n])\s+|\n+")
_STOP = re.compile(r"\s*(?:,|;|:|\(|\bbut\b|\band\b|\bso\b|\bbecause\b|\bplease\b|$)", re.I)
_REMEMBER = re.compile(r"^\s*(?:please\s+)?(?:remember|note|keep in mind)\s+(?:that\s+)?", re.I)
_LANGUAGE = re.compile(
    r"\b(?:answer|reply|respond|write|speak|talk)(?:\s+(?:to\s+)?me)?\s+"
    r"(?:only\s+|always\s+)?in\s+(?P<v>[A-Za-z]+)\b",
    re.I,
)
_WORKPLACE = re.compile(
    r"\bi(?:'m| am)? (?:now )?(?:work(?:ing)?|based) (?P<prep>in|at|for|from) "
    r"(?P<the>the )?(?P<rest>.+)",
    re.I,
)
_MOVED = re.compile(
    r"\bi(?:'ve| have)? (?:just )?moved to (?P<the>the )?(?P<rest>.+? office)\b", re.I
)
_CALLED = r"\b(?:call me|my name is|i am called|i'm called)\s+"
_NAME = r"(?P<v>[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?)"
_JOBS = re.compile(
    r"(?:er|or|ist|ian|ant|ent|eer|manager|admin|administrator|lead|intern|student|"
    r"nurse|doctor|chef|clerk)$",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Statement:
    """One thing the user said about themselves: its topic and a note in the third person."""

    topic: str
    text: str


def _value(rest: str) -> str:
    """The value a pattern matched, cut at the end of its clause."""
    cut = _STOP.search(rest)
    value = rest[: cut.start()] if cut else rest
    return value.strip(" .!?\"'")[:MAX_VALUE_CHARS].strip()


def _place(m: re.Match[str]) -> str:
    article = m.group("the") or ""
    return f"{article}{_value(m.group('rest'))}"


def _sentence(s: str) -> list[Statement]:
    found: list[Statement] = []
    if (m := re.search(_CALLED + _NAME, s, re.I)) and m.group("v")[0].isupper():
        found.append(Statement("name", f"The user's name is {m.group('v')}."))
    if (m := _LANGUAGE.search(s)) and (language := m.group("v").lower()) in LANGUAGES:
        found.append(Statement("language", f"Answer the user in {language.capitalize()}."))
    if (m := _WORKPLACE.search(s)) and (place := _place(m)):
        prep = m.group("prep").lower()
        found.append(Statement("workplace", f"The user works {prep} {place}."))
    elif m := _MOVED.search(s):
        found.append(Statement("workplace", f"The user works in {_place(m)}."))
    home = re.search(r"\bi (?:now )?live in (?P<the>the )?(?P<rest>.+)", s, re.I)
    if home and (place := _place(home)):
        found.append(Statement("home", f"The user lives in {place}."))
    found += _role(s)
    if m := re.search(r"\bi (?:prefer|like|want) (?P<rest>.+)", s, re.I):
        wanted = _value(m.group("rest"))
        if words := re.findall(r"[a-z]+", wanted.lower()):
            last = words[-1].removesuffix("s") or words[-1]
            found.append(Statement(f"prefers {last}"[:64], f"The user prefers {wanted}."))
    for m in re.finditer(r"\bmy (?P<k>[a-z]+(?: zone)?) is (?P<rest>.+)", s, re.I):
        key = m.group("k").lower().replace("time zone", "timezone")
        value = _value(m.group("rest"))
        if key in KEYS and value and not any(f.topic == key for f in found):
            found.append(Statement(key, f"The user's {key} is {value}."))
    return found


def _role(s: str) -> list[Statement]:
    if m := re.search(r"\bi work as (?P<a>an? )?(?P<rest>.+)", s, re.I):
        role = _value(m.group("rest"))
        return [Statement("role", f"The user works as {m.group('a') or ''}{role}.")] if role else []
    if m := re.search(r"\bi(?:'m| am) (?P<a>an? )(?P<rest>[a-z][\w -]+)", s, re.I):
        role = _value(m.group("rest"))
        if role and _JOBS.search(role):
            return [Statement("role", f"The user is {m.group('a')}{role}.")]
    return []


def _clauses(sentence: str) -> list[str]:
    """The statement clauses of a sentence: those before the first question clause
    ("I moved to the Porto office, where is parking?" keeps its first clause)."""
    kept: list[str] = []
    for clause in re.split(r",\s*", sentence):
        if _INTERROGATIVE.match(_CONJUNCTION.sub("", clause)):
            break
        kept.append(clause)
    if kept and len(kept) == len(re.split(r",\s*", sentence)) and sentence.endswith("?"):
        return []  # a question all along ("I work in Lisbon?")
    return [c for c in kept if not _NEGATION.search(c)]


def extract(question: str) -> list[Statement]:
    """The statements a question makes about its user, one per topic (the last wins)."""
    by_topic: dict[str, Statement] = {}
    for raw in _SENTENCES.split(question):
        for clause in _clauses(_REMEMBER.sub("", raw.strip())):
            for statement in _sentence(clause):
                by_topic[statement.topic] = statement
    return list(by_topic.values())
