"""What every `retrieval.ports.VectorStore` adapter must do (the vector store contract suite).

:class:`VectorStoreContract` holds the tests; ``tests/integration/retrieval/test_store_contract.py``
runs them on every adapter :func:`open_store` knows: the embedded Qdrant Edge store, the
server adapter (qdrant-client) on qdrant-client's local mode, and the same adapter on a
Qdrant server when ``AGENTBUS_TEST_QDRANT_URL`` names one (CI has none: there the local mode
stands in for it). The access property test runs on each of them too.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import AsyncGenerator
from pathlib import Path

import pytest

from retrieval.edge_store import EdgeStore
from retrieval.embedders.hashing import HashingEmbedder
from retrieval.errors import CollectionMismatch
from retrieval.models import Access, StoredChunk
from retrieval.ports import VectorStore
from retrieval.sparse import document_vector, query_vector
from retrieval.store import QdrantStore

#: A Qdrant server the server adapter also runs on (unset: only the local mode stands in).
QDRANT_URL = os.environ.get("AGENTBUS_TEST_QDRANT_URL", "")
#: The adapters, by name: Qdrant Edge, qdrant-client's local mode, a Qdrant server.
KINDS = ("edge", "qdrant-local", *(("qdrant-server",) if QDRANT_URL else ()))
EMBEDDER = HashingEmbedder(32)


@contextlib.asynccontextmanager
async def ready(store: VectorStore, *, drop: str | None = None) -> AsyncGenerator[VectorStore]:
    """``store`` with its collection created for `EMBEDDER`; closed afterwards, and the
    collection ``drop`` (one made on a shared Qdrant server) deleted."""
    try:
        await store.ensure_collection(EMBEDDER.dim, EMBEDDER.name)
        yield store
    finally:
        await store.aclose()
        if drop is not None:
            _drop(drop)


async def on_server() -> tuple[QdrantStore, str]:
    """The server adapter on a collection of its own on the Qdrant server, and its name."""
    collection = f"contract_{uuid.uuid4().hex[:12]}"
    return await QdrantStore.open(collection, url=QDRANT_URL), collection


@contextlib.asynccontextmanager
async def open_store(kind: str, folder: Path) -> AsyncGenerator[VectorStore]:
    """One adapter, by its name in `KINDS`, on ``folder`` (the server's: a collection of its
    own, dropped afterwards), ready as :func:`ready` leaves it."""
    if kind == "edge":
        store: VectorStore = await EdgeStore.open(folder, "chunks")
        drop = None
    elif kind == "qdrant-local":
        store, drop = await QdrantStore.open("chunks", path=folder), None
    else:
        store, drop = await on_server()
    async with ready(store, drop=drop) as s:
        yield s


def _drop(collection: str) -> None:
    """Delete a collection the contract made on the Qdrant server."""
    from qdrant_client import QdrantClient

    client = QdrantClient(url=QDRANT_URL, timeout=30)
    try:
        client.delete_collection(collection)
    finally:
        client.close()


def chunk(
    n: int, text: str, *, tenant: str = "t1", acl: tuple[str, ...] = ("*",), **kw: str
) -> StoredChunk:
    """A chunk with a deterministic point id."""
    return StoredChunk(
        id=f"00000000-0000-4000-8000-{n:012d}",
        tenant=tenant,
        acl=acl,
        doc_id=kw.get("doc_id", f"d{n}"),
        version=kw.get("version", "v1"),
        source=f"doc{n}.md",
        title=kw.get("title", ""),
        position=n,
        heading="",
        text=text,
        content_hash=f"h{n}",
    )


async def put(store: VectorStore, *chunks: StoredChunk) -> None:
    """Store chunks with the hashing embedder's vectors and their keyword vectors."""
    texts = [c.text for c in chunks]
    await store.upsert(chunks, await EMBEDDER.embed(texts), [document_vector(t) for t in texts])


async def find(
    store: VectorStore, query: str, access: Access, method: str, limit: int = 10
) -> list[str]:
    """Ids of a search's hits, best first."""
    hits = await store.search(
        access,
        method=method,  # type: ignore[arg-type]
        dense=await EMBEDDER.embed_query(query),
        sparse=query_vector(query),
        limit=limit,
        prefetch_limit=40,
    )
    return [h.chunk.id for h in hits]


class VectorStoreContract:
    """What every vector store adapter does; subclass and provide a ``store`` fixture (a fresh
    store whose collection was made for `EMBEDDER`, as :func:`open_store` gives)."""

    @pytest.fixture
    def store(self) -> VectorStore:
        raise NotImplementedError

    async def test_collection_is_created_once_and_checked(self, store: VectorStore) -> None:
        await store.ensure_collection(EMBEDDER.dim, EMBEDDER.name)  # again: nothing happens
        with pytest.raises(CollectionMismatch):
            await store.ensure_collection(EMBEDDER.dim + 1, "another")

    async def test_versions_report_what_is_stored(self, store: VectorStore) -> None:
        a, b = chunk(1, "alpha harbour"), chunk(2, "beta harbour", acl=("g1", "g2"), version="v2")
        await put(store, a, b)
        missing = chunk(3, "never stored").id
        got = await store.versions([a.id, b.id, missing])
        assert got == {a.id: ("v1", ("*",)), b.id: ("v2", ("g1", "g2"))}
        assert await store.versions([]) == {}

    async def test_relabel_moves_points_to_a_new_version_and_acl(self, store: VectorStore) -> None:
        a = chunk(1, "alpha harbour")
        await put(store, a)
        await store.relabel([a.id], "v9", ["finance"])
        assert await store.versions([a.id]) == {a.id: ("v9", ("finance",))}
        assert await find(store, "alpha harbour", Access.of("t1"), "hybrid") == []
        assert await find(store, "alpha harbour", Access.of("t1", ["finance"]), "hybrid") == [a.id]

    async def test_delete_document_keeps_only_the_given_version(self, store: VectorStore) -> None:
        old = chunk(1, "old text", doc_id="doc")
        new = chunk(2, "new text", doc_id="doc", version="v2")
        other = chunk(3, "other tenant", doc_id="doc", tenant="t2")
        await put(store, old, new, other)
        assert await store.delete_document("t1", "doc", keep_version="v2") == 1
        assert set(await store.versions([old.id, new.id, other.id])) == {new.id, other.id}
        assert await store.delete_document("t1", "doc") == 1
        assert await store.count("t1") == 0 and await store.count("t2") == 1
        assert await store.count() == 1

    async def test_every_method_returns_only_readable_chunks(self, store: VectorStore) -> None:
        mine = chunk(1, "lighthouse keeper notes")
        secret = chunk(2, "lighthouse keeper salary", acl=("hr",))
        theirs = chunk(3, "lighthouse keeper notes", tenant="t2")
        await put(store, mine, secret, theirs)
        for method in ("dense", "keyword", "hybrid"):
            assert set(await find(store, "lighthouse keeper", Access.of("t1"), method)) == {mine.id}
            hr = Access.of("t1", ["hr"])
            assert set(await find(store, "lighthouse keeper", hr, method)) == {mine.id, secret.id}
            assert set(await find(store, "lighthouse keeper", Access.of("t3"), method)) == set()

    async def test_hits_carry_the_whole_chunk_and_respect_the_limit(
        self, store: VectorStore
    ) -> None:
        chunks = [chunk(n, f"harbour report number {n}", title="Reports") for n in range(1, 8)]
        await put(store, *chunks)
        hits = await store.search(
            Access.of("t1"),
            method="hybrid",
            dense=await EMBEDDER.embed_query("harbour report"),
            sparse=query_vector("harbour report"),
            limit=3,
            prefetch_limit=40,
        )
        assert len(hits) == 3
        by_id = {c.id: c for c in chunks}
        for hit in hits:
            assert hit.chunk == by_id[hit.chunk.id] and hit.score > 0 and "hybrid" in hit.scores

    async def test_hybrid_ranks_a_chunk_both_rankings_like_first(self, store: VectorStore) -> None:
        both = chunk(1, "kafka partitions order messages per key")
        dense_only = chunk(2, "kafka partitions order")
        unrelated = chunk(3, "sourdough bread needs time")
        await put(store, dense_only, unrelated, both)
        got = await find(
            store, "kafka partitions order messages per key", Access.of("t1"), "hybrid"
        )
        assert got[0] == both.id and unrelated.id not in got[:2]

    async def test_an_empty_keyword_query_finds_nothing_by_keyword_and_falls_back_to_dense(
        self, store: VectorStore
    ) -> None:
        a = chunk(1, "harbour lighthouse")
        await put(store, a)
        # Only stop words: no keyword terms at all.
        assert await find(store, "the of and", Access.of("t1"), "keyword") == []
        assert await find(store, "the of and", Access.of("t1"), "hybrid") == [a.id]
