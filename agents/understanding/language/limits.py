"""Limits and conditions: the words that bound what a sentence says ("up to", "only", "unless").

"Refunds are paid up to 30 days after purchase" and "refunds are paid 30 days after
purchase" differ by a limit, as "bikes travel free if the ferry is not full" and "bikes
travel free" differ by a condition. Its words are a closed class of each language's grammar
(restrictive adverbs, bounds, exceptive and conditional conjunctions), listed here for the
languages `agents.understanding.language.words` reads, as the coordinating conjunctions are
in `agents.understanding.language.clauses`. A text's words are matched in any case, in order.
"""

from __future__ import annotations

import functools
import re

from agents.understanding.language.words import LANGUAGES

#: Each language's words of a limit or a condition (several words: a phrase, in order).
LIMITS: dict[str, tuple[str, ...]] = {
    "en": (
        "only", "solely", "up to", "at most", "at least", "no more than", "no less than",
        "shorter than", "longer than", "less than", "more than", "fewer than", "maximum",
        "minimum", "unless", "except", "if", "provided that",
    ),
    "pt": (
        "só", "apenas", "somente", "unicamente", "até", "no máximo", "no mínimo",
        "pelo menos", "menos de", "mais de", "menos que", "mais que", "exceto", "salvo",
        "a menos que", "desde que",
    ),
    "es": (
        "solo", "sólo", "solamente", "únicamente", "hasta", "como máximo", "como mínimo",
        "al menos", "por lo menos", "menos de", "más de", "excepto", "salvo", "a menos que",
        "siempre que",
    ),
    "fr": (
        "seulement", "uniquement", "jusqu'à", "jusqu’à", "au plus", "au moins", "au maximum",
        "au minimum", "moins de", "plus de", "sauf", "à moins que", "à condition que",
    ),
    "de": (
        "nur", "ausschließlich", "bis zu", "höchstens", "mindestens", "maximal", "minimal",
        "weniger als", "mehr als", "kürzer als", "länger als", "außer", "es sei denn",
        "sofern", "falls",
    ),
    "it": (
        "solo", "soltanto", "solamente", "fino a", "al massimo", "almeno", "meno di",
        "più di", "tranne", "salvo", "a meno che",
    ),
    "nl": (
        "alleen", "slechts", "tot", "hoogstens", "ten minste", "minstens", "minder dan",
        "meer dan", "behalve", "tenzij",
    ),
}  # fmt: skip


@functools.cache
def _pattern(lang: str) -> re.Pattern[str]:
    phrases = sorted(LIMITS.get(lang, LIMITS[LANGUAGES[0]]), key=len, reverse=True)
    joined = "|".join(re.escape(p).replace(r"\ ", r"\s+") for p in phrases)
    return re.compile(rf"(?<!\w)(?:{joined})(?!\w)", re.IGNORECASE)


def limits(text: str, lang: str) -> list[str]:
    """The limits and conditions ``text`` states in ``lang``, as written, lower-cased."""
    return [" ".join(m.group(0).lower().split()) for m in _pattern(lang).finditer(text)]
