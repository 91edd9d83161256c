"""Ingestion core: prepare a document's chunks, store them idempotently, replace old versions.

A document is identified by (tenant, source) → ``doc_id``; its ``version`` hashes its
content, ACL and chunking settings. A chunk's point id hashes (doc_id, position, content, title),
so storing a batch embeds only the chunks whose ids are not stored yet, moves chunks that
exist under another version/ACL to the new one without re-embedding, and leaves identical
chunks alone. Once every batch of a version is stored, chunks of other versions are
deleted: re-ingesting the same document changes nothing, an edited one replaces its old
chunks, and a reader never sees the document missing in between.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from bus.commands import IngestDoc
from retrieval.chunking import ChunkingConfig, chunk_document
from retrieval.graph.index import GraphIndex
from retrieval.models import Chunk, Document, StoredChunk, normalise_acl, sha256_hex
from retrieval.ports import Embedder, VectorStore
from retrieval.sparse import SparseVec, document_vector

_POINT_NS = uuid.UUID("6f1d7a0e-56c4-4f8e-9b8e-3f2a4d1c0b7a")


def doc_id_for(tenant: str, source: str) -> str:
    """Stable id of a tenant's document at ``source``."""
    return sha256_hex(tenant, source)[:32]


def point_id(doc_id: str, title: str, chunk: Chunk) -> str:
    """Deterministic point id of a chunk (the title is embedded with it, so it counts)."""
    key = f"{doc_id}:{chunk.position}:{chunk.content_hash}:{sha256_hex(title)[:16]}"
    return str(uuid.uuid5(_POINT_NS, key))


def indexed_text(title: str, heading: str, text: str) -> str:
    """What is embedded and keyword-indexed: the chunk with its title and heading path."""
    return "\n".join(part for part in (title, heading, text) if part)


@dataclass(frozen=True, slots=True)
class PreparedDocument:
    """A parsed document chunked and identified, ready to store or publish."""

    doc_id: str
    source: str
    title: str
    version: str
    acl: list[str]
    chunks: list[Chunk]

    def header(self, batch: int = 0, batches: int = 1) -> IngestDoc:
        """The document part of an ingest message."""
        return IngestDoc(
            doc_id=self.doc_id,
            source=self.source,
            title=self.title[:1024],
            version=self.version,
            acl=self.acl,
            batch=batch,
            batches=batches,
        )


def prepare(
    doc: Document, *, tenant: str, acl: Sequence[str] = (), chunking: ChunkingConfig
) -> PreparedDocument:
    """Chunk ``doc`` and compute its ids (no I/O)."""
    groups = normalise_acl(acl)
    settings = f"{chunking.max_chars}/{chunking.overlap_chars}"
    version = sha256_hex(doc.title, doc.text, ",".join(groups), settings)[:32]
    return PreparedDocument(
        doc_id=doc_id_for(tenant, doc.source),
        source=doc.source,
        title=doc.title,
        version=version,
        acl=groups,
        chunks=chunk_document(doc, chunking),
    )


@dataclass(frozen=True, slots=True)
class BatchResult:
    """What storing one batch did."""

    embedded: int = 0
    relabelled: int = 0
    unchanged: int = 0
    facts: int = 0


@dataclass(frozen=True, slots=True)
class DocumentResult:
    """What ingesting one document did (``changed`` is False for a no-op re-ingest)."""

    doc_id: str
    source: str
    chunks: int
    embedded: int
    relabelled: int
    unchanged: int
    deleted: int
    facts: int = 0

    @property
    def changed(self) -> bool:
        """True if anything was written or deleted."""
        return bool(self.embedded or self.relabelled or self.deleted)


#: Batches of one document embedded at once (`Ingestor.ingest`).
_EMBED_AHEAD = 2


@dataclass(slots=True)
class _Batch:
    """A batch ready to write: the new chunks with their vectors, the moved chunk ids."""

    tenant: str
    doc: IngestDoc
    ids: list[str]
    chunks: Sequence[Chunk]
    moved: list[str]
    records: list[StoredChunk] = field(default_factory=lambda: [])
    dense: list[list[float]] = field(default_factory=lambda: [])
    sparse: list[SparseVec] = field(default_factory=lambda: [])


class Ingestor:
    """Stores prepared chunks: embeds what is new, relabels what moved, deletes what is stale.

    Args:
        store: the chunk collection.
        embedder: the dense embedder (the same one search uses).
        graph: with it, each batch's facts are extracted and stored too, and dropped with
            the document's other versions.
    """

    def __init__(
        self, store: VectorStore, embedder: Embedder, graph: GraphIndex | None = None
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.graph = graph
        self._ready = False

    def with_graph(self, graph: GraphIndex | None) -> Ingestor:
        """This ingestor over the same store and embedder, storing facts with ``graph``."""
        twin = Ingestor(self.store, self.embedder, graph)
        twin._ready = self._ready
        return twin

    async def ready(self) -> None:
        """Create (or check) the collection for this embedder, once."""
        if not self._ready:
            await self.store.ensure_collection(self.embedder.dim, self.embedder.name)
            self._ready = True

    async def store_batch(
        self, tenant: str, doc: IngestDoc, chunks: Sequence[Chunk]
    ) -> BatchResult:
        """Store one batch of a document version's chunks (idempotent)."""
        return await self._write(await self._embed(tenant, doc, chunks))

    async def _embed(self, tenant: str, doc: IngestDoc, chunks: Sequence[Chunk]) -> _Batch:
        """What storing a batch takes: which chunks are new (embedded now) or moved."""
        await self.ready()
        ids = [point_id(doc.doc_id, doc.title, c) for c in chunks]
        stored = await self.store.versions(ids)
        acl = tuple(doc.acl)
        new = [(i, c) for i, c in zip(ids, chunks, strict=True) if i not in stored]
        moved = [i for i in ids if i in stored and stored[i] != (doc.version, acl)]
        batch = _Batch(tenant, doc, ids, chunks, moved)
        if new:
            texts = [indexed_text(doc.title, c.heading, c.text) for _, c in new]
            batch.dense = await self.embedder.embed(texts)
            batch.sparse = [document_vector(t) for t in texts]
            batch.records = [
                StoredChunk(
                    id=i,
                    tenant=tenant,
                    acl=acl,
                    doc_id=doc.doc_id,
                    version=doc.version,
                    source=doc.source,
                    title=doc.title,
                    position=c.position,
                    heading=c.heading,
                    text=c.text,
                    content_hash=c.content_hash,
                )
                for i, c in new
            ]
        return batch

    async def _write(self, batch: _Batch) -> BatchResult:
        if batch.records:
            await self.store.upsert(batch.records, batch.dense, batch.sparse)
        await self.store.relabel(batch.moved, batch.doc.version, batch.doc.acl)
        facts = 0
        if self.graph is not None:  # after the chunks: a fact never names a missing chunk
            stored = await self.graph.store_batch(batch.tenant, batch.doc, batch.ids, batch.chunks)
            facts = stored.facts
        new, moved = len(batch.records), len(batch.moved)
        return BatchResult(new, moved, len(batch.ids) - new - moved, facts)

    async def finish_document(self, tenant: str, doc_id: str, version: str) -> int:
        """Delete the document's chunks (and facts) of other versions; returns the chunks."""
        await self.ready()
        if self.graph is not None:
            await self.graph.finish_document(tenant, doc_id, version)
        return await self.store.delete_document(tenant, doc_id, keep_version=version)

    async def ingest(
        self, prepared: PreparedDocument, *, tenant: str, batch_size: int = 64
    ) -> DocumentResult:
        """Store a whole prepared document in this process, then drop its old versions."""
        [result] = await self.ingest_all([prepared], tenant=tenant, batch_size=batch_size)
        return result

    async def ingest_all(
        self, documents: Sequence[PreparedDocument], *, tenant: str, batch_size: int = 64
    ) -> list[DocumentResult]:
        """Store documents in this process, each then dropping its old versions.

        Batches are pipelined, across documents too: the next batch is embedded while one
        is written, and two batches' embeddings overlap so the embedder's threads never
        wait on one batch's last, smallest group.
        """
        embedding = asyncio.Semaphore(_EMBED_AHEAD)

        async def one(doc: PreparedDocument, b: int, batches: int) -> BatchResult:
            part = doc.chunks[b * batch_size : (b + 1) * batch_size]
            async with embedding:
                batch = await self._embed(tenant, doc.header(b, batches), part)
            return await self._write(batch)

        async def document(doc: PreparedDocument) -> DocumentResult:
            batches = max(1, -(-len(doc.chunks) // batch_size))
            results = await asyncio.gather(*(one(doc, b, batches) for b in range(batches)))
            deleted = await self.finish_document(tenant, doc.doc_id, doc.version)
            return DocumentResult(
                doc.doc_id,
                doc.source,
                len(doc.chunks),
                sum(r.embedded for r in results),
                sum(r.relabelled for r in results),
                sum(r.unchanged for r in results),
                deleted,
                sum(r.facts for r in results),
            )

        return list(await asyncio.gather(*(document(d) for d in documents)))

    async def delete(self, tenant: str, source: str) -> int:
        """Remove a document entirely (its facts too); returns the chunks deleted."""
        await self.ready()
        doc_id = doc_id_for(tenant, source)
        if self.graph is not None:
            await self.graph.finish_document(tenant, doc_id, None)
        return await self.store.delete_document(tenant, doc_id)
