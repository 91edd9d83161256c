"""The ``documents`` source for gather steps (``agents.sources.Source``): the context a
run is given before its model answers (single mode's first call, multi mode's plan and
the judges' re-query).

A gather branch runs on a retrieval worker with the run's command, so the search is
filtered by the command's tenant and ACL groups exactly like ``search_docs``.

Single mode's context is given unasked, so a passage must be about the question to be
part of it (`RelevanceFloor`): the tenant's best passages for "What is 15% of 840?" are
still about travel and parking, and the 0.5B model, given them, multiplied 15 by 840.
Multi mode keeps the nearest passages whatever they score: its judges' re-query needs
them to refute a draft (with the floor there, the 0.5B's wrong two-fact answers passed
the verifier; measured). ``search_docs`` returns the best matches whatever their scores.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bus.commands import Command, GatherTask
from retrieval.embedders.local_onnx import MODEL_NAME as MINILM
from retrieval.models import Access, Hit
from retrieval.search import Searcher

#: The name planners choose this source by.
DOCUMENTS = "documents"

DocumentsSource = Callable[[Command, str], Awaitable[list[dict[str, Any]]]]


@dataclass(frozen=True, slots=True)
class RelevanceFloor:
    """What a passage must score, on one side of hybrid search or the other, to be context.

    Attributes:
        similarity: the least cosine similarity of the question and the passage.
        keyword: the least keyword (BM25) score, for a passage that shares the question's
            words but not its phrasing.
    """

    similarity: float
    keyword: float

    async def keep(
        self,
        searcher: Searcher,
        query: str,
        access: Access,
        hits: list[Hit],
        embedded: list[float] | None = None,
    ) -> list[Hit]:
        """The hits, in their order, that reach the floor on either side (``embedded``:
        the query's vector, if the caller has it)."""
        k = searcher.config.max_top_k
        dense, keyword = await asyncio.gather(
            searcher.search(query, access, top_k=k, method="dense", embedded=embedded),
            searcher.search(query, access, top_k=k, method="keyword"),
        )
        near = _ids_at_least(dense, "dense", self.similarity)
        near |= _ids_at_least(keyword, "keyword", self.keyword)
        return [h for h in hits if h.chunk.id in near]


def _ids_at_least(hits: Sequence[Hit], side: str, floor: float) -> set[str]:
    return {h.chunk.id for h in hits if h.scores.get(side, h.score) >= floor}


#: The floor per embedder, measured on the shipped answer set's documents (MiniLM: the
#: document questions' best passage scored 0.46-0.84, or 3.6-7.9 by keyword; the
#: arithmetic and clock questions' best at most 0.30, and 1.4 by keyword). An embedder
#: not listed has no floor: its similarities are on a scale nobody measured here.
FLOORS: dict[str, RelevanceFloor] = {MINILM: RelevanceFloor(similarity=0.35, keyword=3.0)}


def _single_mode(command: Command) -> bool:
    task = command.payload
    return isinstance(task, GatherTask) and task.state.settings.mode == "single"


def documents_source(searcher: Searcher, *, top_k: int | None = None) -> DocumentsSource:
    """A gather source over the caller's documents: ranked ``{id, source, title, text}``;
    in single mode, the passages under the embedder's `RelevanceFloor` left out."""
    floor = FLOORS.get(searcher.embedder.name)

    async def search(command: Command, query: str) -> list[dict[str, Any]]:
        access = Access.of(command.tenant_id, command.groups)
        applied = floor if query.strip() and _single_mode(command) else None
        # Embedded once for both searches: the floor's own dense search reuses it.
        embedded = None if applied is None else await searcher.embedder.embed_query(query.strip())
        hits = await searcher.search(query, access, top_k=top_k, embedded=embedded)
        if applied is not None and hits:
            hits = await applied.keep(searcher, query, access, hits, embedded)
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
