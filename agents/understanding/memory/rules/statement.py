"""The value helpers the memory rules share."""

from __future__ import annotations

import unicodedata

#: The longest value kept from one statement (a place, a name, a preference).
MAX_VALUE_CHARS = 80


def fold(word: str) -> str:
    """A word as the word tables spell it: lower case, without accents ("Büro" -> "buro")."""
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))
