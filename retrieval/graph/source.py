"""The ``graph`` source for gather steps (``agents.sources.Source``).

A gather branch runs on a retrieval worker with the run's command, so the walk is
filtered by the command's tenant and ACL groups exactly like the ``documents`` source.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from bus.commands import Command
from retrieval.graph.search import GraphSearch
from retrieval.models import Access

#: The name planners choose this source by.
GRAPH = "graph"

GraphSource = Callable[[Command, str], Awaitable[list[dict[str, Any]]]]


def graph_source(search: GraphSearch, *, top_k: int | None = None) -> GraphSource:
    """A gather source over the caller's facts: ranked ``{id, source, title, text}``."""

    async def walk(command: Command, query: str) -> list[dict[str, Any]]:
        access = Access.of(command.tenant_id, command.groups)
        return [p.item() for p in await search.search(query, access, top_k=top_k)]

    return walk
