"""The cheap first pass: does a question say anything about its user at all?

The finalizer asks it of every run (`agents.roles.finalizer`), so it loads no dictionary and calls
no model: a first-person pronoun or possessive in any of the five languages, a sentence
opened by a Portuguese or Spanish first-person verb ("Trabalho ...", "Soy ..."), or words
about answers ("answer in Portuguese", "respuestas cortas"). It errs towards yes: a yes
costs one memory step after the run, where the extractor reads the question properly.
"""

from __future__ import annotations

import re

from agents.understanding.memory.rules.lexicon import LEXICONS

#: Object pronouns and the possessives' other forms, beside each lexicon's own.
_ALSO_MINE = "me mine minha minhas meus mis moi mes mich mir meinen meinem meiner"
_FIRST_PERSON = frozenset(w for lex in LEXICONS.values() for w in lex.me | lex.mine) | frozenset(
    _ALSO_MINE.split()
)
#: Words about answers ("answer in Portuguese", "respuestas cortas", "explain").
ANSWERS = re.compile(
    r"\b(?:answer|repl(?:y|ies)|resp[oó]n[dn]|resposta|respuesta|r[ée]pon[ds]|antwort|explain)\w*",
    re.I,
)
_WORD = re.compile(r"[^\W\d_]+")
#: A Portuguese or Spanish sentence opened by a first-person verb ("Trabalho", "Soy").
_PRO_DROP = re.compile(
    r"^(?:¡|ya |afinal |agora |ahora )?[^\W\d_]+(?:o|ou|oy|ei)\b(?![^.!;]*\?)", re.I
)
_SENTENCE = re.compile(r"(?<=[.!?;:])\s+")


def worth_remembering(question: str) -> bool:
    """Whether the question may say something about its user (then the memory step runs)."""
    if any(w in _FIRST_PERSON for w in _WORD.findall(question.casefold())):
        return True
    if ANSWERS.search(question):
        return True
    return any(_PRO_DROP.match(s.strip()) for s in _SENTENCE.split(question))
