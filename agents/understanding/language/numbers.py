"""Numbers written in words, as digits: "twenty-seven days" reads as "27 days"."""

from __future__ import annotations

import functools
import re

from text_to_num import alpha2digit  # pyright: ignore[reportMissingTypeStubs, reportUnknownVariableType]

from agents.understanding.language.words import language

#: A draft's citation marker ("[3]", "[1, 2]"): it names a passage, not a figure, so a
#: reader of figures drops it first.
CITATION = re.compile(r"\[\d+(?:\s*,\s*\d+)*\]")
#: The languages text2num reads (its codes).
READS = frozenset({"en", "fr", "es", "pt", "de", "nl", "it", "da"})
#: A number written alone below this stays a word (text2num's threshold, its default): "one"
#: is more often a pronoun than a count, and "first" or "second" an ordinal read as "1st".
ALONE_BELOW = 3.0
#: The threshold that reads "two" alone as 2 too (ordinals from "second" on become figures).
ALONE_BELOW_ALL = 1.5


@functools.lru_cache(maxsize=1024)
def with_digits(text: str, lang: str | None = None, alone_below: float = ALONE_BELOW) -> str:
    """``text`` with its numbers written in words as digits; one written alone below
    ``alone_below`` is left as a word (by default "one" and "two": "one" is more often a
    pronoun than a count; :data:`ALONE_BELOW_ALL` reads all but "one")."""
    lang = lang or language(text)
    if lang not in READS:
        return text
    try:
        out = str(alpha2digit(text, lang, threshold=alone_below))  # pyright: ignore[reportUnknownArgumentType]
    except Exception:  # text2num refuses some inputs; the words stay words
        return text
    return out
