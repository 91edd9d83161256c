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


@functools.lru_cache(maxsize=1024)
def with_digits(text: str, lang: str | None = None) -> str:
    """``text`` with its numbers written in words as digits (a lone "one" is left as a
    word: it is more often a pronoun than a count)."""
    lang = lang or language(text)
    if lang not in READS:
        return text
    try:
        out = str(alpha2digit(text, lang))  # pyright: ignore[reportUnknownArgumentType]
    except Exception:  # text2num refuses some inputs; the words stay words
        return text
    return out
