"""The English rules: "I work in the Lisbon office", "answer in Portuguese", "call me Ana".

Each reads one clause (`agents.memory_rules` splits the question and drops question
clauses); a clause with an English negation ("I don't work in Lisbon") gives nothing.
"""

from __future__ import annotations

import re

from agents.memory_rules.languages import LANGUAGES
from agents.memory_rules.statement import Statement, clip

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


def _value(rest: str) -> str:
    """The value a pattern matched, cut at the end of its clause."""
    cut = _STOP.search(rest)
    return clip(rest[: cut.start()] if cut else rest)


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


def opens_question(clause: str) -> bool:
    """Whether a clause opens an English question ("where do I park", "and can I ...")."""
    return bool(_INTERROGATIVE.match(_CONJUNCTION.sub("", clause)))


def strip_remember(sentence: str) -> str:
    """A sentence without its "remember that" / "note that" opener."""
    return _REMEMBER.sub("", sentence)


def statements(clause: str) -> list[Statement]:
    """What one clause says about its user in English (nothing from a negated clause)."""
    return [] if _NEGATION.search(clause) else _sentence(clause)
