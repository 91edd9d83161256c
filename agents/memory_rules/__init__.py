"""What a question says about its user, by rules: first-person statements and preferences.

Offline and cheap (microseconds a question, no model call): "I work in the Lisbon office",
"answer in Portuguese", "call me Ana", "my team is Payments", "I prefer short answers",
and the same in Portuguese, Spanish, French and German ("Trabalho no escritório de
Lisboa", "Responde en español", "Je m'appelle Claire", "Ich arbeite im Berliner Büro").
Each statement gets a topic; a later statement on the same topic replaces the earlier one
(`bus.store.memories`), whatever language each was said in. Only first-person sentences
count: "remember that the user is an admin" says nothing about the speaker, so nothing is
taken from it. Questions ("do I work in Lisbon?", "Wo arbeite ich?") and negations ("não
trabalho em Lisboa") are not statements and are skipped.

The input is only ever the user's own question text (`agents.remember`): documents, tool
results and model output never reach these rules.
"""

from __future__ import annotations

import re

from agents.memory_rules import english, french, german, portuguese, spanish
from agents.memory_rules.statement import MAX_VALUE_CHARS, Statement
from agents.memory_rules.table import LanguageRules, statements

__all__ = ["MAX_VALUE_CHARS", "TABLES", "Statement", "extract", "worth_remembering"]

#: The languages read by a rule table; English has rules of its own (`english.py`).
TABLES: tuple[LanguageRules, ...] = (
    portuguese.RULES,
    spanish.RULES,
    french.RULES,
    german.RULES,
)

_SENTENCES = re.compile(r"(?<=[.!?;\n])\s+|\n+")
#: Quoted words are someone else's ("what does 'Ich arbeite in Berlin' mean").
_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”|„[^“”]*[“”]|«[^»]*»|‘[^’]*’|(?<!\w)'[^']*'(?!\w)")
#: A sentence asking for a translation carries someone else's words too.
_TRANSLATE = re.compile(r"\b(?:translat|tradu|übersetz|ubersetz)\w*", re.I)


def _opens_question(clause: str) -> bool:
    return english.opens_question(clause) or any(t.question.search(clause) for t in TABLES)


def _strip_remember(sentence: str) -> str:
    for table in TABLES:
        sentence = table.remember.sub("", sentence, count=1)
    return english.strip_remember(sentence)


def _clauses(sentence: str) -> list[str]:
    """The statement clauses of a sentence: those before the first question clause
    ("I moved to the Porto office, where is parking?" keeps its first clause)."""
    clauses = re.split(r",\s*", sentence)
    kept: list[str] = []
    for clause in clauses:
        if _opens_question(clause):
            break
        kept.append(clause)
    if len(kept) == len(clauses) and sentence.endswith("?"):
        return []  # a question all along ("I work in Lisbon?", "Trabajo en Madrid?")
    return kept


def extract(question: str) -> list[Statement]:
    """The statements a question makes about its user, one per topic (the last wins)."""
    by_topic: dict[str, Statement] = {}
    unquoted = _QUOTED.sub(" ", question).replace("’", "'")
    for raw in _SENTENCES.split(unquoted):
        if _TRANSLATE.search(raw):
            continue
        for clause in _clauses(_strip_remember(raw.strip())):
            found = english.statements(clause)
            found += [s for table in TABLES for s in statements(table, clause)]
            for statement in found:
                by_topic[statement.topic] = statement
    return list(by_topic.values())


def worth_remembering(question: str) -> bool:
    """Whether the question says something about its user: the finalizer sends the memory
    step only then, so a run that states nothing costs no hop."""
    return bool(extract(question))
