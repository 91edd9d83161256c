"""Entities in text: capitalised names and figures with units, and their matching keys.

A key is what matching compares: lower case, NFKC, punctuation and a leading article or
a trailing possessive removed, digit group separators dropped (``4,200`` = ``4200``).
The same key function serves ingest (each fact's ends) and queries (every n-gram of the
question), so "Who leads project falcon?" finds the facts of "Project Falcon".
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

Kind = Literal["name", "figure"]

_UNITS = (
    r"%|percent|per cent|million|billion|thousand|trillion|[kmgt]b|kb|mb|gb|tb|ms|km|kg|mg|"
    r"m|cm|mm|s|seconds?|minutes?|hours?|days?|weeks?|months?|years?|people|employees|"
    r"staff|users|customers|members|engineers|requests|tokens|chunks|servers|nodes|"
    r"offices|stores|units|tons|tonnes|litres|liters|euros?|dollars?|usd|eur|gbp|°c|°f"
)
_FIGURE = re.compile(
    rf"(?<![\w.])[$€£]?\d+(?:[.,]\d+)*(?:\s?(?:{_UNITS})\b|%)?"
    r"(?:\s(?:million|billion|thousand)\b)?",
    re.IGNORECASE,
)
_CAP = r"[A-Z][\w&'’.-]*"
_JOIN = r"(?:of|for|de|del|der|van|von|la|le|du|da|&)"
_NAME = re.compile(rf"{_CAP}(?:\s+(?:{_JOIN}\s+)?{_CAP})*")
#: Capitalised words that start a sentence or a clause without naming anything.
_NOT_NAMES_TEXT = """a an the this that these those it its it's he she they we you i
    our their his her
    my your in on at by for from with to of and or but if when while after before since
    during until as so then there here what which who whom whose where why how each every
    all any some no not one two three also however meanwhile today yesterday tomorrow
    both either neither most many much more less few several such other another
    monday tuesday wednesday thursday friday saturday sunday is are was were be been
    january february march april may june july august september october november december
    yes note see figure table step"""
_NOT_NAMES = frozenset(_NOT_NAMES_TEXT.split())
_KEY_DROP = re.compile(r"[^\w\s%$€£.]")
_ARTICLE = re.compile(r"^(?:the|a|an)\s+")
_POSSESSIVE = re.compile(r"['’]s\b")
_DIGIT_GROUP = re.compile(r"(?<=\d),(?=\d{3}\b)")
_SPACES = re.compile(r"\s+")


def entity_key(text: str) -> str:
    """The matching key of an entity's text (empty when nothing is left)."""
    value = unicodedata.normalize("NFKC", text).lower()
    value = _POSSESSIVE.sub("", value)
    value = _DIGIT_GROUP.sub("", value)
    value = _KEY_DROP.sub(" ", value)
    value = value.replace(". ", " ").rstrip(".")
    value = _SPACES.sub(" ", value).strip()
    return _ARTICLE.sub("", value)


@dataclass(frozen=True, slots=True)
class Mention:
    """An entity as it appears in a sentence: its text, kind and span."""

    text: str
    kind: Kind
    start: int
    end: int


def _trimmed_name(sentence: str, start: int, end: int) -> Mention | None:
    """A name span without the capitalised non-names at its start (``The``, ``In``)."""
    words = list(re.finditer(r"\S+", sentence[start:end]))
    while words and words[0].group().lower().strip("'’") in _NOT_NAMES:
        words.pop(0)
    while words and words[-1].group().lower() in _NOT_NAMES | {"of", "for", "&"}:
        words.pop()
    if not words:
        return None
    first, last = start + words[0].start(), start + words[-1].end()
    text = sentence[first:last].rstrip(".’'")
    if len(text) < 2 or not any(c.isalpha() for c in text):
        return None
    return Mention(text, "name", first, first + len(text))


def mentions(sentence: str) -> list[Mention]:
    """The names and figures of a sentence, in order, none overlapping."""
    found: list[Mention] = []
    for m in _FIGURE.finditer(sentence):
        text = m.group().strip()
        if any(c.isdigit() for c in text):
            found.append(Mention(text, "figure", m.start(), m.start() + len(text)))
    taken = [(f.start, f.end) for f in found]
    for m in _NAME.finditer(sentence):
        if any(s < m.end() and m.start() < e for s, e in taken):
            continue
        name = _trimmed_name(sentence, m.start(), m.end())
        if name is not None:
            found.append(name)
    return sorted(found, key=lambda x: x.start)


#: Words a question n-gram may not consist of alone (they name nothing).
_NOISE_TEXT = """do does did has have had can could will would should may might must about which
    company person people year years led lead leads based work works made make
    s name named many much long"""
_QUESTION_NOISE = _NOT_NAMES | frozenset(_NOISE_TEXT.split())
_MAX_NGRAM = 5


def question_keys(question: str) -> set[str]:
    """Every key a question may name: its mentions, and its word n-grams (1-5 words),
    so a lower-case question still matches a capitalised name."""
    keys = {entity_key(m.text) for s in sentences(question) for m in mentions(s)}
    words = entity_key(question.replace("?", " ")).split()
    for n in range(1, _MAX_NGRAM + 1):
        for i in range(len(words) - n + 1):
            gram = words[i : i + n]
            if all(w in _QUESTION_NOISE for w in gram):
                continue
            if n == 1 and len(gram[0]) < 3 and not gram[0].isdigit():
                continue
            keys.add(" ".join(gram))
    keys.discard("")
    return keys


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9$€£])|\n\s*\n|\n(?=\s*(?:[-*•#]|\d+\.)\s)")


def sentences(text: str) -> list[str]:
    """The text cut at sentence ends, blank lines and list items."""
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]
