"""How the memory rules read text: the language (simplemma), sentences and clauses, words
and their lemmas.

A clause is what a sentence says between commas, semicolons and "but" ("I live in Lisbon
but work in Porto" is two). Words keep their case (a capital marks a name); the apostrophes
and clitics of English, French and Portuguese are spelled out first ("I'm" -> "I am",
"j'habite" -> "je habite", "chamo-me" -> "chamo me"), so each word is one lemma.
"""

from __future__ import annotations

import functools
import re

import simplemma

from agents.understanding.memory.rules.lexicon import LEXICONS

#: The languages the rules read; anything else is read as English.
LANGS = ("en", "pt", "es", "fr", "de")
_SENTENCES = re.compile(r"(?<=[.!?;:\n])\s+|\n+")
_CLAUSES = re.compile(
    r"\s*[,;(]\s*|\s+(?:but|mas|pero|mais|aber|sondern)\s+"
    r"|\s+(?:and|e|y|et|und)\s+(?=(?:please|por favor|bitte|s'il)\b)",
    re.I,
)
_WORD = re.compile(r"[^\W_]+(?:[-+/.'][^\W_]+)*|[^\w\s]")
_EN = (
    (re.compile(r"n't\b", re.I), " not"),
    (re.compile(r"'m\b", re.I), " am"),
    (re.compile(r"'re\b", re.I), " are"),
    (re.compile(r"'ve\b", re.I), " have"),
    (re.compile(r"'d\b", re.I), " would"),
    (re.compile(r"\b(I|name|it|that|what|he|she)'s\b", re.I), r"\1 is"),
)
_FR_ELISION = re.compile(r"\b([jmntslcd]|qu)'", re.I)
_CLITIC = re.compile(r"(?<=\w)-(?=(?:me|te|se|nos|vos|lhe|lo|la|moi|toi|nous|vous)\b)", re.I)
#: Quoted words are someone else's ("what does 'Ich arbeite in Berlin' mean").
QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”|„[^“”]*[“”]|«[^»]*»|‘[^’]*’|(?<!\w)'[^']*'(?!\w)")
#: A sentence asking for a translation carries someone else's words too.
TRANSLATE = re.compile(r"\b(?:translat|tradu|übersetz|ubersetz)\w*", re.I)


def language(text: str) -> str:
    """The language of a text, of the five: the one whose own small words (pronouns,
    articles, prepositions, negations) it uses most, simplemma's detector deciding between
    equals (alone, it reads "My time zone is PST." as German); English when unsure."""
    detected = dict(simplemma.langdetect(text, lang=LANGS))
    said = [w.lower() for w in re.findall(r"[^\W\d_]+", text)]

    def weight(lang: str) -> float:
        return sum(w in LEXICONS[lang].small for w in said) + detected.get(lang, 0.0)

    best = max(LANGS, key=weight)
    return best if weight(best) > 0 else "en"


def sentences(text: str) -> list[str]:
    """The sentences of a text, without quoted words."""
    unquoted = QUOTED.sub(" ", text.replace("’", "'"))
    return [s.strip() for s in _SENTENCES.split(unquoted) if s.strip()]


def clauses(sentence: str) -> list[str]:
    """The clauses of a sentence (a question keeps its "?" on its last clause)."""
    return [c for c in _CLAUSES.split(sentence) if c.strip()]


def words(clause: str, lang: str) -> list[str]:
    """The words of a clause, contractions and clitics spelled out."""
    if lang == "en":
        for pattern, spelled in _EN:
            clause = pattern.sub(spelled, clause)
    elif lang == "fr":
        clause = _FR_ELISION.sub(
            lambda m: f"{m.group(1)}e " if len(m.group(1)) == 1 else "que ", clause
        )
    if lang in ("pt", "es", "fr"):
        clause = _CLITIC.sub(" ", clause)
    return _WORD.findall(clause)


@functools.lru_cache(maxsize=4096)
def lemma(word: str, lang: str) -> str:
    """A word's lemma in a language, lower case ("trabajé" -> "trabajar")."""
    return simplemma.lemmatize(word.lower(), lang=lang).lower()
