"""Memory by rules (`agents.understanding.memory_rules`): no model call, five languages, lemmas."""

from __future__ import annotations

import asyncio

from agents.understanding.memory.ports import Statement
from agents.understanding.memory_rules import extract


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
