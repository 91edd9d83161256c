"""The memory extraction port: a user's own question in, the facts it states about them out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class Statement:
    """One thing the user said about themselves: its topic and the fact.

    A later statement on the same topic replaces the earlier one (`bus.store.memories`), so
    a correction ("I live in Porto now") replaces the fact it corrects.
    """

    topic: str
    text: str


@runtime_checkable
class MemoryExtractor(Protocol):
    """Reads the facts a user states about themselves: none from a request, a question, a
    hypothetical, a negation, someone else's facts or quoted words."""

    @property
    def name(self) -> str:
        """A short label for logs and the eval (``rules``, ``model``)."""
        ...

    async def extract(self, question: str) -> list[Statement]:
        """The facts the question states about its user, at most one per topic."""
        ...
