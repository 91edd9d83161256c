"""The ``documents`` source for gather steps (``agents.sources.Source``): the context a
run is given before its model answers (single mode's first call, multi mode's plan and
the judges' re-query).

A gather branch runs on a retrieval worker with the run's command, so the search is
filtered by the command's tenant and ACL groups exactly like ``search_docs``.

Single mode's context is given unasked, so a passage must be about the question to be
part of it (`retrieval.relevance`): the tenant's best passages for "What is 15% of 840?" are
still about travel and parking, and the 0.5B model, given them, multiplied 15 by 840.
Multi mode keeps the nearest passages whatever they score: its judges' re-query needs
them to refute a draft (with the floor there, the 0.5B's wrong two-fact answers passed
the verifier; measured). ``search_docs`` returns the best matches whatever their scores.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from bus.commands import Command, GatherTask
from retrieval.models import Access, Hit
from retrieval.relevance import floor_for
from retrieval.search import Searcher

#: The name planners choose this source by.
DOCUMENTS = "documents"

DocumentsSource = Callable[[Command, str], Awaitable[list[dict[str, Any]]]]


async def about_the_question(
    searcher: Searcher,
    query: str,
    access: Access,
    hits: list[Hit],
    embedded: list[float] | None = None,
) -> list[Hit]:
    """The hits, in their order, that are about ``query`` (`retrieval.relevance`), by the
    embedder's floor (``embedded``: the query's vector, if the caller has it)."""
    floor = floor_for(searcher.embedder.name)
    similarity: dict[str, float] = {}
    if floor.similarity is not None:
        k = searcher.config.max_top_k
        dense = await searcher.search(query, access, top_k=k, method="dense", embedded=embedded)
        similarity = {h.chunk.id: h.score for h in dense}
    return [h for h in hits if floor.keeps(query, h, similarity.get(h.chunk.id))]


def _single_mode(command: Command) -> bool:
    task = command.payload
    return isinstance(task, GatherTask) and task.state.settings.mode == "single"


def documents_source(searcher: Searcher, *, top_k: int | None = None) -> DocumentsSource:
    """A gather source over the caller's documents: ranked ``{id, source, title, text}``;
    in single mode, only the passages about the question (`about_the_question`)."""

    async def search(command: Command, query: str) -> list[dict[str, Any]]:
        access = Access.of(command.tenant_id, command.groups)
        floored = bool(query.strip()) and _single_mode(command)
        # Embedded once for both searches: the floor's own dense search reuses it.
        embedded = await searcher.embedder.embed_query(query.strip()) if floored else None
        hits = await searcher.search(query, access, top_k=top_k, embedded=embedded)
        if floored and hits:
            hits = await about_the_question(searcher, query, access, hits, embedded)
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
