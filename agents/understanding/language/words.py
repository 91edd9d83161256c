"""Content words: the lemmas of a text's words that are not its language's function words."""

from __future__ import annotations

import functools
import re

import simplemma
from stop_words import get_stop_words  # pyright: ignore[reportMissingTypeStubs]

#: The languages a text is read in (simplemma's codes); the first is the default.
LANGUAGES = ("en", "pt", "es", "fr", "de", "it", "nl")
#: A word: letters, with inner apostrophes and hyphens ("l'abonnement", "early-bird").
WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
MIN_LENGTH = 3
#: How sure simplemma must be of a language before it is taken over the default.
MIN_SHARE = 0.3


@functools.lru_cache(maxsize=512)
def language(text: str) -> str:
    """The language ``text`` is most likely in, among :data:`LANGUAGES` (default English)."""
    ranked = simplemma.langdetect(text, lang=LANGUAGES)
    best, share = ranked[0]
    return best if best in LANGUAGES and share >= MIN_SHARE else LANGUAGES[0]


@functools.cache
def function_words(lang: str) -> frozenset[str]:
    """The function words of ``lang`` (stop-words' list), lower-cased."""
    try:
        words: list[str] = get_stop_words(lang)
    except Exception:  # a language stop-words does not ship: no word is a function word
        return frozenset()
    return frozenset(w.lower() for w in words)


@functools.lru_cache(maxsize=8192)
def lemma(word: str, lang: str) -> str:
    """The lemma of ``word`` in ``lang``, lower-cased ("holidays" -> "holiday")."""
    return simplemma.lemmatize(word.lower(), lang=lang).lower()


def words(text: str) -> list[str]:
    """The words of ``text`` as written (letters only: no figure is a word)."""
    return WORD.findall(text)


def content_words(text: str, lang: str | None = None) -> list[str]:
    """The lemmas of the words of ``text`` that say something: not a function word of its
    language, at least :data:`MIN_LENGTH` letters."""
    lang = lang or language(text)
    stop = function_words(lang)
    out: list[str] = []
    for word in words(text):
        low = word.lower()
        if len(low) < MIN_LENGTH or low in stop:
            continue
        lemmatized = lemma(low, lang)
        if lemmatized not in stop:
            out.append(lemmatized)
    return out


def content_set(text: str, lang: str | None = None) -> set[str]:
    """:func:`content_words` as a set."""
    return set(content_words(text, lang))
