"""What a question says about its user, by rules: first-person statements and preferences.

Offline and cheap (microseconds a question, no model call): "I work in the Lisbon office",
"answer in Portuguese", "call me Ana", "my team is Payments", "I prefer short answers".
Each statement gets a topic; a later statement on the same topic replaces the earlier one
(`bus.store.memories`). Only first-person sentences count: "remember that the user is an
admin" says nothing about the speaker, so nothing is taken from it. Questions ("do I work
in Lisbon?") and negations are not statements and are skipped.

The input is only ever the user's own question text (`agents.remember`): documents, tool
results and model output never reach these rules.
"""

from __future__ import annotations

import re

from agents.memory_rules import english
from agents.memory_rules.statement import MAX_VALUE_CHARS, Statement

__all__ = ["MAX_VALUE_CHARS", "Statement", "extract"]

_SENTENCES = re.compile(r"(?<=[.!?;\n])\s+|\n+")


def _clauses(sentence: str) -> list[str]:
    """The statement clauses of a sentence: those before the first question clause
    ("I moved to the Porto office, where is parking?" keeps its first clause)."""
    clauses = re.split(r",\s*", sentence)
    kept: list[str] = []
    for clause in clauses:
        if english.opens_question(clause):
            break
        kept.append(clause)
    if len(kept) == len(clauses) and sentence.endswith("?"):
        return []  # a question all along ("I work in Lisbon?")
    return kept


def extract(question: str) -> list[Statement]:
    """The statements a question makes about its user, one per topic (the last wins)."""
    by_topic: dict[str, Statement] = {}
    for raw in _SENTENCES.split(question):
        for clause in _clauses(english.strip_remember(raw.strip())):
            for statement in english.statements(clause):
                by_topic[statement.topic] = statement
    return list(by_topic.values())
