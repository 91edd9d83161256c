"""An English first-person clause said of "the user": "I work at Siemens" -> "The user works
at Siemens", "my name is Ana" -> "The user's name is Ana"."""

from __future__ import annotations

import re

from agents.understanding.memory.rules.reading import lemma

_PRONOUNS = {
    "i": "the user",
    "me": "the user",
    "my": "the user's",
    "myself": "themselves",
    "mine": "the user's",
}
_FINITE = {"am": "is", "was": "was", "have": "has", "do": "does"}
_ADVERB = re.compile(r"(?:ly|now|just|also|still|only|actually|currently|mostly|usually|always)$")
_SPACE_BEFORE = re.compile(r"\s+([.,;:!?%)])")


def _third(verb: str) -> str:
    low = verb.lower()
    if low in _FINITE:
        return _FINITE[low]
    if lemma(low, "en") != low:
        return verb  # already inflected ("moved", "worked")
    if re.search(r"(?:s|sh|ch|x|z|o)$", low):
        return verb + "es"
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    return verb + "s"


def third_person(words: list[str]) -> str:
    """The clause's words said of the user, as one sentence."""
    out: list[str] = []
    after_i = False
    for word in words:
        low = word.lower()
        if low in _PRONOUNS:
            out.append(_PRONOUNS[low])
            after_i = low == "i"
        elif after_i and _ADVERB.search(low):
            out.append(word)
        elif after_i:
            out.append(_third(word))
            after_i = False
        else:
            out.append(word)
    text = _SPACE_BEFORE.sub(r"\1", " ".join(out)).strip(" .")
    return text[:1].upper() + text[1:] + "."
