"""The ``documents`` source for multi-mode gather steps (``agents.sources.Source``).

A gather branch runs on a retrieval worker with the run's command, so the search is
filtered by the command's tenant and ACL groups exactly like ``search_docs``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from bus.commands import Command
from retrieval.models import Access
from retrieval.search import Searcher

#: The name planners choose this source by.
DOCUMENTS = "documents"

DocumentsSource = Callable[[Command, str], Awaitable[list[dict[str, Any]]]]


def documents_source(searcher: Searcher, *, top_k: int | None = None) -> DocumentsSource:
    """A gather source over the caller's documents: ranked ``{id, source, title, text}``."""

    async def search(command: Command, query: str) -> list[dict[str, Any]]:
        access = Access.of(command.tenant_id, command.groups)
        hits = await searcher.search(query, access, top_k=top_k)
        return [
            {
                "id": h.chunk.id,
                "source": h.chunk.source,
                "title": h.chunk.title,
                "heading": h.chunk.heading,
                "text": h.chunk.text,
            }
            for h in hits
        ]

    return search
