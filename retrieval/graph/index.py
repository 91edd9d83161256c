"""The ingest side of the knowledge graph: extract a batch's facts and store them.

Called by the `retrieval.ingest.Ingestor` after a batch's chunks are stored, for every
chunk of the batch (new, moved to a new version or unchanged) that has no facts stored
under this version yet: the rows are keyed by chunk, version and place, so storing a
batch again writes nothing new (and extracts only what the first try did not store). When the last
batch of a version is stored, the document's other versions' facts are dropped, as its
chunks are.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from bus.commands import IngestDoc
from bus.store.facts import FactChunk, FactStore
from retrieval.models import Chunk
from retrieval.ports import FactExtractor


@dataclass(frozen=True, slots=True)
class GraphBatch:
    """What storing one batch's facts did: facts stored, seconds spent extracting."""

    facts: int
    extract_s: float


class GraphIndex:
    """Extracts and stores facts per ingest batch (one per process, like the ingestor).

    Args:
        facts: the SQL fact store.
        extractor: rules by default, or a model-based extractor injected by the caller.
    """

    def __init__(self, facts: FactStore, extractor: FactExtractor) -> None:
        self.facts = facts
        self.extractor = extractor

    async def store_batch(
        self, tenant: str, doc: IngestDoc, ids: Sequence[str], chunks: Sequence[Chunk]
    ) -> GraphBatch:
        """Extract the facts of a batch's chunks (``ids`` are their point ids) and store them."""
        if not chunks:
            return GraphBatch(0, 0.0)
        # A redelivered batch (or an unchanged document ingested again) keeps the facts
        # stored the first time: a model extractor is not paid twice for them.
        done = await self.facts.stored_chunks(tenant, doc.version, ids)
        todo = [(i, c) for i, c in zip(ids, chunks, strict=True) if i not in done]
        started = time.perf_counter()
        found = await self.extractor.extract([c.text for _, c in todo])
        spent = time.perf_counter() - started
        rows = [
            FactChunk(i, doc.source, doc.title, c.heading, c.position, c.text, tuple(facts))
            for (i, c), facts in zip(todo, found, strict=True)
        ]
        stored = await self.facts.put(tenant, doc.doc_id, doc.version, doc.acl, rows)
        return GraphBatch(stored, spent)

    async def finish_document(self, tenant: str, doc_id: str, version: str | None) -> int:
        """Drop the document's facts of versions other than ``version`` (None: all)."""
        return await self.facts.drop_other_versions(tenant, doc_id, keep_version=version)
