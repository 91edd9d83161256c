"""One language's rules as a table (`LanguageRules`), and how a table reads a clause.

Portuguese, Spanish, French and German each fill one table (`portuguese.py`, ...); the
reading is the same for all of them and gives the same notes the English rules give:
topics ``workplace``, ``home``, ``name``, ``language``, ``role``, ``prefers ...`` and the
``my <key> is ...`` keys, with the text in English and the values in the user's words.

Every pattern needs the speaker: a first-person verb ("trabalho", "je travaille",
"ich arbeite") or possessive ("minha equipa", "mein Team"). "o utilizador é admin" or
"der Benutzer ist Admin" match none of them. Where and whom a value names must carry a
capital letter ("Trabajo en Madrid", not "trabajo en equipo").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from agents.memory_rules.languages import canonical_language
from agents.memory_rules.statement import Statement, clip, fold, named

Patterns = tuple[re.Pattern[str], ...]

#: A name: one or two words, each kept only when capitalised ("Ana", "Jonas Müller").
_NAME = re.compile(r"\s*(?P<first>[^\W\d_][\w'-]*)(?:\s+(?P<last>[^\W\d_][\w'-]*))?")


@dataclass(frozen=True, slots=True)
class LanguageRules:
    """One language's patterns and words (patterns match case-insensitively).

    The named groups a pattern must have are in brackets; the first pattern of a tuple
    that matches is used.
    """

    negation: re.Pattern[str]
    """Any match in a clause and the language's rules take nothing from it."""
    question: re.Pattern[str]
    """A clause that opens a question (its start: "onde", "¿", "wo", ...)."""
    remember: re.Pattern[str]
    """The "remember that" opener of a sentence, removed before it is read."""
    stop: re.Pattern[str]
    """Where a value ends ("e", "pero", "mais", "und", a comma ...)."""
    articles: re.Pattern[str]
    """A leading article dropped from a value ("a Google" -> "Google")."""
    work: Patterns
    """Where the user works [prep, rest]."""
    preps: Mapping[str, str]
    """The English preposition of each (folded) preposition of `work`; else "in"."""
    moved: Patterns
    """The user moved to an office [rest]: kept only when `office` reads it."""
    office: Callable[[str], str | None]
    """The city of an office a value names ("escritório de Lisboa" -> "Lisboa")."""
    home: Patterns
    """Where the user lives [rest]."""
    name: Patterns
    """The user's name [rest]: its first one or two capitalised words."""
    work_as: Patterns
    """The user's role as "I work as" [rest]."""
    i_am: Patterns
    """The user's role as "I am" [rest]: kept only when its first word is one of `jobs`."""
    jobs: frozenset[str]
    """Folded job words; a longer word ending in one of five letters or more counts."""
    answer_in: Patterns
    """The language to answer in [v]."""
    prefer: Patterns
    """What the user prefers [rest]."""
    answers: frozenset[str]
    """Folded words for "answers": a preference for them has the topic "prefers answer"."""
    lengths: Mapping[str, str]
    """Folded adjectives of an answer's length, in English ("curtas" -> "short")."""
    mine: Patterns
    """``my <key> is <value>`` [k, rest]."""
    keys: Mapping[str, str]
    """The topic of each folded key of `mine` worth keeping ("equipa" -> "team")."""


def patterns(*sources: str) -> Patterns:
    """Patterns compiled as a table holds them (case-insensitive)."""
    return tuple(re.compile(source, re.I) for source in sources)


def word_set(words: str) -> frozenset[str]:
    """Comma-separated words, folded."""
    return frozenset(fold(w.strip()) for w in words.split(","))


def by_word(groups: Mapping[str, str]) -> dict[str, str]:
    """Each comma-separated word of a group, folded, mapped to its group's name."""
    return {w: name for name, words in groups.items() for w in word_set(words)}


def office_of(pattern: str) -> Callable[[str], str | None]:
    """An `LanguageRules.office` reading a value with one pattern [city]."""
    compiled = re.compile(pattern, re.I)

    def office(value: str) -> str | None:
        m = compiled.match(value)
        return m.group("city") if m and m.group("city")[:1].isupper() else None

    return office


def _first(patterns: Patterns, clause: str) -> re.Match[str] | None:
    return next((m for p in patterns if (m := p.search(clause))), None)


def _value(rules: LanguageRules, rest: str) -> str:
    """The value a pattern matched, cut at the end of its clause, without its article."""
    cut = rules.stop.search(rest)
    return clip(rules.articles.sub("", clip(rest[: cut.start()] if cut else rest), count=1))


def _workplace(rules: LanguageRules, clause: str) -> list[Statement]:
    if m := _first(rules.work, clause):
        place = _value(rules, m.group("rest"))
        if city := rules.office(place):
            return [Statement("workplace", f"The user works in the {city} office.")]
        prep = rules.preps.get(fold(m.group("prep")), "in")
        return [Statement("workplace", f"The user works {prep} {place}.")] if named(place) else []
    if (m := _first(rules.moved, clause)) and (city := rules.office(_value(rules, m["rest"]))):
        return [Statement("workplace", f"The user works in the {city} office.")]
    return []


def _name(rules: LanguageRules, clause: str) -> list[Statement]:
    m = _first(rules.name, clause)
    n = _NAME.match(m.group("rest")) if m else None
    if n is None or not n.group("first")[0].isupper():
        return []  # "chama-me depois", "me llamo 42"
    last = n.group("last") if n.group("last") and n.group("last")[0].isupper() else None
    name = f"{n.group('first')} {last}" if last else n.group("first")
    return [Statement("name", f"The user's name is {name}.")]


def _role(rules: LanguageRules, clause: str) -> list[Statement]:
    if (m := _first(rules.work_as, clause)) and (role := _value(rules, m["rest"])):
        return [Statement("role", f"The user works as {role}.")]
    if (m := _first(rules.i_am, clause)) and (role := _value(rules, m["rest"])):
        head = fold(role.split()[0])
        if head in rules.jobs or any(len(j) >= 5 and head.endswith(j) for j in rules.jobs):
            return [Statement("role", f"The user is {role}.")]
    return []


def _language(rules: LanguageRules, clause: str) -> list[Statement]:
    if (m := _first(rules.answer_in, clause)) and (language := canonical_language(m["v"])):
        return [Statement("language", f"Answer the user in {language.capitalize()}.")]
    return []


def _preference(rules: LanguageRules, clause: str) -> list[Statement]:
    m = _first(rules.prefer, clause)
    wanted = _value(rules, m.group("rest")) if m else ""
    words = [fold(w) for w in re.findall(r"[^\W\d_]+", wanted)]
    if not words:
        return []
    if any(w in rules.answers for w in words):
        length = next((rules.lengths[w] for w in words if w in rules.lengths), None)
        text = f"{length} answers" if length else wanted
        return [Statement("prefers answer", f"The user prefers {text}.")]
    last = words[-1].removesuffix("s") or words[-1]
    return [Statement(f"prefers {last}"[:64], f"The user prefers {wanted}.")]


def _overlapping(pattern: re.Pattern[str], clause: str) -> list[re.Match[str]]:
    """Every match, the next searched from where a value starts: in "minha equipa é X e
    o meu fuso é Y" the second key is inside the first one's value."""
    found: list[re.Match[str]] = []
    while m := pattern.search(clause, found[-1].start("rest") if found else 0):
        found.append(m)
    return found


def _keys(rules: LanguageRules, clause: str, found: list[Statement]) -> list[Statement]:
    kept: list[Statement] = []
    for m in (m for p in rules.mine for m in _overlapping(p, clause)):
        key = rules.keys.get(fold(" ".join(m.group("k").split())))
        value = _value(rules, m.group("rest"))
        if key == "language" and (language := canonical_language(value)):
            value = language.capitalize()
        if key and value and not any(f.topic == key for f in [*found, *kept]):
            kept.append(Statement(key, f"The user's {key} is {value}."))
    return kept


def statements(rules: LanguageRules, clause: str) -> list[Statement]:
    """What one clause says about its user by one language's rules (nothing if negated)."""
    if rules.negation.search(clause):
        return []
    found = _name(rules, clause) + _language(rules, clause) + _workplace(rules, clause)
    if m := _first(rules.home, clause):
        place = _value(rules, m.group("rest"))
        found += [Statement("home", f"The user lives in {place}.")] if named(place) else []
    found += _role(rules, clause) + _preference(rules, clause)
    return found + _keys(rules, clause, found)
