"""The languages a user may ask to be answered in, by their canonical (English) names."""

from __future__ import annotations

#: The canonical (English) names a memory stores.
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
