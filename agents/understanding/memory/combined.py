"""Memory by the model, with what the rules read on topics the model left out.

The rules are precise where they read a clause at all (they keep nothing from a request, a
question, a hypothetical, a negation, someone else's clause or quoted words), so a fact of
theirs is added when the model stored nothing on its topic and nothing that says the same
(a fact sharing half its words with one of the model's, by their first letters: "Sou
vegetariano." beside "The user is vegetarian."). The model's facts come first and are
never removed.
"""

from __future__ import annotations

import re

from agents.understanding.memory.ports import MemoryExtractor, Statement
from agents.understanding.memory.rules.statement import fold

#: Words that say nothing of what a fact is about.
_FRAME = frozenset(
    ["the", "user", "user's", "users", "with", "from", "that", "this", "they", "their"]
)
#: Letters that tell two spellings of a word apart ("vegetarian", "vegetariano").
_STEM = 5


def _content(text: str) -> set[str]:
    return {w[:_STEM] for w in re.findall(r"[^\W_]+", fold(text)) if len(w) > 3} - _FRAME


def says_the_same(fact: Statement, others: list[Statement]) -> bool:
    """Whether ``fact`` is on a topic of ``others`` or shares half its words with one."""
    words = _content(fact.text)
    return any(
        fact.topic == other.topic or (words and len(words & _content(other.text)) * 2 >= len(words))
        for other in others
    )


class ModelWithRules:
    """`MemoryExtractor`: the model's facts, then the rules' on topics the model left out."""

    def __init__(self, model: MemoryExtractor, rules: MemoryExtractor) -> None:
        self._model = model
        self._rules = rules

    @property
    def name(self) -> str:
        """``model+rules``."""
        return f"{self._model.name}+{self._rules.name}"

    async def extract(self, question: str) -> list[Statement]:
        """Both extractors' facts on one question: one model call."""
        found = await self._model.extract(question)
        ruled = await self._rules.extract(question)
        return [*found, *(s for s in ruled if not says_the_same(s, found))]
