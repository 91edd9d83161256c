"""What a question says about its user, by rules (`RulesMemory`, no model call): the memory
extractor's fallback and the cheap first pass (`worth_remembering`).

The question's language is found by simplemma, its sentences and clauses are read one by
one (`facts.read`), with simplemma's lemmas and the closed word classes of `lexicon`, in
English, Portuguese, Spanish, French and German. Quoted words and sentences asking for a
translation are someone else's, and a question's clauses are not statements: nothing is
taken from them. A later statement on a topic replaces the earlier one, in the question
and in the store (`bus.store.memories`).

The input is only ever the user's own question text (`agents.roles.remember`): documents, tool
results and model output never reach these rules.
"""

from __future__ import annotations

import asyncio

from agents.understanding.memory.ports import Statement
from agents.understanding.memory.rules.facts import read
from agents.understanding.memory.rules.gate import worth_remembering
from agents.understanding.memory.rules.lexicon import LEXICONS
from agents.understanding.memory.rules.reading import TRANSLATE, clauses, language, sentences, words
from agents.understanding.memory.rules.statement import MAX_VALUE_CHARS

__all__ = ["MAX_VALUE_CHARS", "RulesMemory", "Statement", "extract", "worth_remembering"]


def extract(question: str) -> list[Statement]:
    """The statements a question makes about its user, one per topic (the last wins)."""
    lang = language(question)
    lex = LEXICONS[lang]
    by_topic: dict[str, Statement] = {}
    for sentence in sentences(question):
        if TRANSLATE.search(sentence):
            continue
        asked = sentence.rstrip().endswith("?") or sentence.lstrip().startswith("¿")
        parts = clauses(sentence)
        for n, clause in enumerate(parts):
            # A question is its last clause (or one opening with an asking word, which
            # `read` refuses): "I work in Porto now, where is parking?" states where.
            last = n == len(parts) - 1
            found = read(clause, words(clause, lang), lex, lang, asked and last)
            if found is not None:
                by_topic[found.topic] = found
    return list(by_topic.values())


class RulesMemory:
    """The rules as a `MemoryExtractor` (the model's fallback, and the default where the
    measurement says the model is not better)."""

    @property
    def name(self) -> str:
        """Extractor id."""
        return "rules"

    async def extract(self, question: str) -> list[Statement]:
        """The facts the question states about its user (read off the event loop: the
        first call loads the languages' dictionaries)."""
        return await asyncio.to_thread(extract, question)
