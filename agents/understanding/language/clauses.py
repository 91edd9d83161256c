"""Sentences and their conjuncts: which words a figure is said with.

"The allowance is 62 EUR in Germany and 48 EUR in Portugal" says 62 of Germany and 48 of
Portugal: a coordinating conjunction or a comma ends what a figure is said of, however
near the next word is. The words before a sentence's first figure (its subject, "the
allowance") are said of every conjunct after them too, as the sentence leaves them out.
Coordinating conjunctions are a closed class of each language's grammar, listed here for
the languages `agents.understanding.language.words` reads.
"""

from __future__ import annotations

import functools
import re

from agents.understanding.language.words import LANGUAGES

_SENTENCE = re.compile(r"[.;!?](?:\s+|$)|\n+")
#: Each language's coordinating conjunctions (and, but, or, while, whereas).
COORDINATORS: dict[str, tuple[str, ...]] = {
    "en": ("and", "but", "or", "while", "whereas"),
    "pt": ("e", "mas", "ou", "enquanto"),
    "es": ("y", "e", "pero", "o", "mientras"),
    "fr": ("et", "mais", "ou", "tandis que", "alors que"),
    "de": ("und", "aber", "oder", "während", "wohingegen"),
    "it": ("e", "ma", "o", "mentre"),
    "nl": ("en", "maar", "of", "terwijl"),
}


@functools.cache
def _boundary(lang: str) -> re.Pattern[str]:
    words = COORDINATORS.get(lang, COORDINATORS[LANGUAGES[0]])
    joined = "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in words)
    return re.compile(rf",(?!\d)\s*(?:(?:{joined})\b\s*)?|\s+(?:{joined})\s+", re.IGNORECASE)


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` (split after ``.``, ``;``, ``!``, ``?`` and at line ends)."""
    return [s for s in _SENTENCE.split(text) if s.strip()]


def conjuncts(sentence: str, lang: str) -> list[tuple[int, int]]:
    """The (start, end) offsets of ``sentence``'s conjuncts: its parts between commas and
    coordinating conjunctions of ``lang``."""
    out: list[tuple[int, int]] = []
    start = 0
    for match in _boundary(lang).finditer(sentence):
        if sentence[start : match.start()].strip():
            out.append((start, match.start()))
        start = match.end()
    if sentence[start:].strip():
        out.append((start, len(sentence)))
    return out
