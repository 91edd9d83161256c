"""Whether the words a model's fact cites are the user stating something of themselves.

The model extractor asks the model for each fact's ``quote``, the user's own words it comes
from; these rules check those words where they are precise, and can only refuse a fact:

- the words are in the message, outside quoted words and a request for a translation (a
  quote the message does not hold is the model's own);
- a clause they fall in states something: it neither asks (a question's last clause, or one
  opened by an asking word), denies, wants something nor supposes (unless it is about how
  answers should be: "I'd like short answers");
- its speaker is the user: "I"/"ich", a Portuguese or Spanish first-person verb that opens
  it, "my <name|time zone|...>", or words about answers; a possessive naming someone else
  ("my colleague ...") or no first person at all ("Anna lives ...") is someone else, except
  for how answers should be ("Keep it short."). A clause with no subject of its own ("...
  but work in Porto") has its sentence's previous speaker.

And `invented`: the names a fact gives that the message never says (a city the model added).
"""

from __future__ import annotations

import re
from typing import Literal

from agents.understanding.memory.rules.gate import ANSWERS
from agents.understanding.memory.rules.languages import canonical_language
from agents.understanding.memory.rules.lexicon import LEXICONS, Lexicon
from agents.understanding.memory.rules.reading import (
    TRANSLATE,
    clauses,
    language,
    lemma,
    sentences,
    words,
)
from agents.understanding.memory.rules.statement import fold

Speaker = Literal["user", "other"]
#: Object pronouns that name the speaker ("bullet points work best for me").
_OBJECT_ME = frozenset(["me", "moi", "mich", "mir"])
#: A name is a capitalised word not opening the fact (nor "The user").
_NAME = re.compile(r"(?<=\s)[A-ZÀ-Ý][\w-]*")
#: How many letters of a name must open a word of the message ("Lisbon" for "Lisboa").
_NAME_PREFIX = 4


def _folded(text: str) -> list[str]:
    return [fold(w) for w in re.findall(r"[^\W_]+", text)]


def _pro_drop(low: list[str], lang: str, lex: Lexicon) -> bool:
    """A Portuguese or Spanish clause opened by a first-person verb ("Tengo", "Sou")."""
    if lang not in ("pt", "es") or not low:
        return False
    word = low[0]
    if not word.endswith(("o", "ou", "oy", "ei")):
        return False
    verbs = lex.be | lex.work | lex.live | lex.use | lex.lead | lex.prefer | lex.called
    base = lemma(word, lang)
    return word in verbs or base in verbs or (base != word and base.endswith(("ar", "er", "ir")))


def speaker(clause: str, lang: str) -> Speaker | None:
    """Who a clause is about: the user, someone else, or None when it names no one."""
    lex = LEXICONS[lang]
    low = [w.lower() for w in words(clause, lang)]
    if _pro_drop(low, lang, lex):
        return "user"
    for i, word in enumerate(low):
        if word in lex.me:
            return "user"
        if word in lex.mine:
            named = {lemma(w, lang) for w in low[i + 1 : i + 4]} | set(low[i + 1 : i + 4])
            return "user" if named & lex.keys.keys() else "other"
    if ANSWERS.search(clause) or any(w in _OBJECT_ME for w in low):
        return "user"
    return None


def _states(clause: str, lang: str, last_of_question: bool) -> bool:
    """Whether a clause states something (it neither asks, wants, supposes nor denies)."""
    lex = LEXICONS[lang]
    low = [w.lower() for w in words(clause, lang)]
    if not low or last_of_question or low[0] in lex.asking:
        return False
    if any(w in lex.negation for w in low):
        return False
    if ANSWERS.search(clause):  # "I'd like answers in French" is how answers should be
        return True
    return not any(w in lex.condition or w in lex.want or lemma(w, lang) in lex.want for w in low)


def _overlaps(clause: str, quote: set[str]) -> bool:
    own = set(_folded(clause))
    shared = own & quote
    return bool(shared) and len(shared) * 2 >= min(len(own), len(quote))


def states_about_user(message: str, quote: str, *, on_answers: bool = False) -> bool:
    """Whether ``quote``, the words a fact cites, is the user stating something of
    themselves in ``message``. A fact ``on_answers`` (how answers should be) may cite a
    clause that names no one: an instruction to the assistant ("Keep it short.")."""
    cited = _folded(quote)
    said = set(_folded(message))
    if not cited or sum(w in said for w in cited) * 3 < len(cited) * 2:
        return False  # the message does not hold the quote
    lang = language(message)
    for sentence in sentences(message):
        if TRANSLATE.search(sentence):
            continue
        asked = sentence.rstrip().endswith("?") or sentence.lstrip().startswith("¿")
        parts = clauses(sentence)
        who: Speaker | None = None
        for n, clause in enumerate(parts):
            who = speaker(clause, lang) or who
            if (
                (who == "user" or (who is None and on_answers))
                and _overlaps(clause, set(cited))
                and _states(clause, lang, asked and n == len(parts) - 1)
            ):
                return True
    return False


def invented(fact: str, message: str) -> list[str]:
    """The names ``fact`` gives that no word of ``message`` opens with (language names
    aside: a fact may name the language the user wrote in English)."""
    said = _folded(message)
    return [
        name
        for name in _NAME.findall(fact)
        if not canonical_language(name) and not any(w.startswith(_opening(name)) for w in said)
    ]


def _opening(name: str) -> str:
    """The first letters of a name's first word, folded ("UTC-3" -> "utc")."""
    return (_folded(name) or [""])[0][:_NAME_PREFIX]
