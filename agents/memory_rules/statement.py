"""What every language's rules produce: a `Statement`, and the value helpers they share."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

#: The longest value kept from one statement (a place, a name, a preference).
MAX_VALUE_CHARS = 80


@dataclass(frozen=True, slots=True)
class Statement:
    """One thing the user said about themselves: its topic and a note in the third person."""

    topic: str
    text: str


def clip(value: str) -> str:
    """A value without the punctuation around it, at most `MAX_VALUE_CHARS` long."""
    return value.strip(" .!?\"'¡¿«»")[:MAX_VALUE_CHARS].strip()


def fold(word: str) -> str:
    """A word as the word tables spell it: lower case, without accents ("Büro" -> "buro")."""
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def named(value: str) -> bool:
    """Whether a value names something (has a capital letter): "Lisboa", not "equipa"."""
    return any(c.isupper() for c in value)
