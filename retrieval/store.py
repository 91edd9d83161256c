"""Chunks on a Qdrant server: one collection per deployment, tenant and ACL in every payload.

The collection has a named dense vector (cosine) and a named sparse keyword vector with
Qdrant's IDF modifier. Every read takes an `Access` and filters on tenant and ACL inside
*each* prefetch, so a chunk the caller may not read never reaches fusion or the reranker.

qdrant-client is used synchronously on a private thread pool. Its local mode (``path=``)
is not a deployment choice (a brute-force scan in Python, ~550 ms per hybrid query over
10,000 chunks here; the embedded default is `retrieval.edge_store`): it stands in for the
server in the store contract suite, and then gets exactly one thread, because its SQLite
file belongs to the thread that opened it.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from qdrant_client import QdrantClient
from qdrant_client import models as qm

from retrieval.errors import CollectionMismatch, StoreLocked, StoreUnavailable
from retrieval.models import Access, Hit, StoredChunk
from retrieval.ports import Method
from retrieval.sparse import SparseVec

T = TypeVar("T")
DENSE = "dense"
KEYWORD = "keyword"
#: Payload fields with an index on a Qdrant server (local mode has none).
INDEXED = {"tenant": True, "acl": False, "doc_id": False}


def access_filter(access: Access) -> qm.Filter:
    """Tenant equals the caller's, and the ACL lists one of the caller's groups or ``*``."""
    return qm.Filter(
        must=[
            qm.FieldCondition(key="tenant", match=qm.MatchValue(value=access.tenant)),
            qm.FieldCondition(key="acl", match=qm.MatchAny(any=access.readable_acl())),
        ]
    )


def _sparse(vec: SparseVec) -> qm.SparseVector:
    return qm.SparseVector(indices=vec.indices, values=vec.values)


def _probe_lock(path: Path) -> None:
    """Fail fast if another client holds the folder's lock.

    qdrant-client loads every collection before it tries the lock, and on failure leaves
    its lock file open; probing first is cheaper and leaks nothing.
    """
    import portalocker

    lock = path / ".lock"
    if not lock.exists():
        return
    with lock.open("r+") as f:
        try:
            portalocker.lock(
                f, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING
            )
        except portalocker.exceptions.LockException as e:
            raise RuntimeError(f"Storage folder {path} is already accessed") from e
        portalocker.unlock(f)


class QdrantStore:
    """The chunk collection. Build with `QdrantStore.open`; close with `aclose`."""

    def __init__(self, client: QdrantClient, collection: str, pool: ThreadPoolExecutor) -> None:
        self._client = client
        self.collection = collection
        self._pool = pool
        self.local = client.init_options.get("path") is not None or client.init_options.get(
            "location"
        ) in (":memory:",)

    @classmethod
    async def open(
        cls,
        collection: str,
        *,
        url: str | None = None,
        path: Path | None = None,
        api_key: str | None = None,
    ) -> QdrantStore:
        """Connect to a Qdrant server (``url``) or open local mode in the folder ``path``.

        Raises:
            StoreLocked: the local folder is open in another process.
        """
        pool = ThreadPoolExecutor(max_workers=4 if url else 1, thread_name_prefix="qdrant")

        def connect() -> QdrantClient:
            if url:
                return QdrantClient(url=url, api_key=api_key, timeout=30)
            assert path is not None, "local mode needs a folder"
            path.mkdir(parents=True, exist_ok=True)
            _probe_lock(path)
            return QdrantClient(path=str(path), force_disable_check_same_thread=True)

        try:
            client = await asyncio.get_running_loop().run_in_executor(pool, connect)
        except RuntimeError as e:
            pool.shutdown(wait=False)
            if "already accessed" in str(e):
                raise StoreLocked(f"local Qdrant folder {path} is in use") from e
            raise StoreUnavailable(f"cannot open Qdrant: {e}") from e
        return cls(client, collection, pool)

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        call = functools.partial(fn, *args, **kwargs)
        try:
            return await asyncio.get_running_loop().run_in_executor(self._pool, call)
        except (OSError, ConnectionError) as e:
            raise StoreUnavailable(f"Qdrant request failed: {e}") from e

    async def aclose(self) -> None:
        """Close the client (releases the local folder's lock) and its threads."""
        await self._run(self._client.close)
        self._pool.shutdown(wait=True)

    async def ensure_collection(self, dim: int, embedder: str) -> None:
        """Create the collection and its payload indexes if missing; check the vector size.

        Raises:
            CollectionMismatch: it exists with another dense vector size.
        """
        if await self._run(self._client.collection_exists, self.collection):
            info = await self._run(self._client.get_collection, self.collection)
            vectors = info.config.params.vectors
            size = vectors[DENSE].size if isinstance(vectors, dict) else None
            if size != dim:
                built = (info.config.metadata or {}).get("embedder", "another embedder")
                raise CollectionMismatch(
                    f"collection {self.collection!r} holds {size}-dim vectors ({built}); "
                    f"the embedder {embedder!r} makes {dim}-dim ones"
                )
            return
        await self._run(
            self._client.create_collection,
            self.collection,
            vectors_config={DENSE: qm.VectorParams(size=dim, distance=qm.Distance.COSINE)},
            sparse_vectors_config={KEYWORD: qm.SparseVectorParams(modifier=qm.Modifier.IDF)},
            metadata={"embedder": embedder, "dim": dim},
        )
        if not self.local:  # local mode has no payload indexes (and warns if asked)
            for field, is_tenant in INDEXED.items():
                params = qm.KeywordIndexParams(
                    type=qm.KeywordIndexType.KEYWORD, is_tenant=is_tenant
                )
                await self._run(self._client.create_payload_index, self.collection, field, params)

    async def versions(self, ids: Sequence[str]) -> dict[str, tuple[str, tuple[str, ...]]]:
        """Stored (version, acl) of the points among ``ids`` that exist."""
        if not ids:
            return {}
        records = await self._run(
            self._client.retrieve,
            self.collection,
            list(ids),
            with_payload=qm.PayloadSelectorInclude(include=["version", "acl"]),
        )
        return {
            str(r.id): (r.payload["version"], tuple(r.payload["acl"])) for r in records if r.payload
        }

    async def upsert(
        self,
        chunks: Sequence[StoredChunk],
        dense: Sequence[list[float]],
        sparse: Sequence[SparseVec],
    ) -> None:
        """Write chunks with their vectors (same order in all three)."""
        points = [
            qm.PointStruct(id=c.id, vector={DENSE: d, KEYWORD: _sparse(s)}, payload=c.payload())
            for c, d, s in zip(chunks, dense, sparse, strict=True)
        ]
        if points:
            await self._run(self._client.upsert, self.collection, points, wait=True)

    async def relabel(self, ids: Sequence[str], version: str, acl: Sequence[str]) -> None:
        """Move existing points to a new document version and ACL (no re-embedding)."""
        if ids:
            await self._run(
                self._client.set_payload,
                self.collection,
                {"version": version, "acl": list(acl)},
                points=list(ids),
                wait=True,
            )

    def _doc_filter(self, tenant: str, doc_id: str, keep_version: str | None) -> qm.Filter:
        return qm.Filter(
            must=[
                qm.FieldCondition(key="tenant", match=qm.MatchValue(value=tenant)),
                qm.FieldCondition(key="doc_id", match=qm.MatchValue(value=doc_id)),
            ],
            must_not=[qm.FieldCondition(key="version", match=qm.MatchValue(value=keep_version))]
            if keep_version
            else None,
        )

    async def delete_document(
        self, tenant: str, doc_id: str, *, keep_version: str | None = None
    ) -> int:
        """Delete a document's chunks (those of other versions than ``keep_version``)."""
        flt = self._doc_filter(tenant, doc_id, keep_version)
        stale = (await self._run(self._client.count, self.collection, flt, exact=True)).count
        if stale:
            selector = qm.FilterSelector(filter=flt)
            await self._run(self._client.delete, self.collection, selector, wait=True)
        return stale

    async def count(self, tenant: str | None = None) -> int:
        """Points stored (of one tenant, or all)."""
        flt = (
            qm.Filter(must=[qm.FieldCondition(key="tenant", match=qm.MatchValue(value=tenant))])
            if tenant
            else None
        )
        return (await self._run(self._client.count, self.collection, flt, exact=True)).count

    async def search(
        self,
        access: Access,
        *,
        method: Method,
        dense: list[float] | None,
        sparse: SparseVec | None,
        limit: int,
        prefetch_limit: int,
    ) -> list[Hit]:
        """The best ``limit`` chunks ``access`` may read, by ``method``.

        Hybrid fuses a dense and a keyword prefetch with RRF; the access filter is inside
        both prefetches (and, on a server, on the outer query too). An empty keyword query
        falls back to dense.
        """
        flt = access_filter(access)
        use_sparse = sparse is not None and not sparse.empty
        kwargs: dict[str, Any] = {"query_filter": flt, "limit": limit, "with_payload": True}
        if method == "keyword" or (method == "hybrid" and dense is None):
            if not use_sparse:
                return []
            assert sparse is not None
            kwargs.update(query=_sparse(sparse), using=KEYWORD)
        elif method == "dense" or not use_sparse:
            kwargs.update(query=dense, using=DENSE)
        else:
            assert sparse is not None
            kwargs.update(
                prefetch=[
                    qm.Prefetch(query=dense, using=DENSE, filter=flt, limit=prefetch_limit),
                    qm.Prefetch(
                        query=_sparse(sparse), using=KEYWORD, filter=flt, limit=prefetch_limit
                    ),
                ],
                query=qm.FusionQuery(fusion=qm.Fusion.RRF),
            )
            if self.local:
                # Fusion only ranks what the (filtered) prefetches returned; local mode
                # would scan every point's payload once more for the outer filter.
                del kwargs["query_filter"]
        response = await self._run(self._client.query_points, self.collection, **kwargs)
        return [
            Hit(
                StoredChunk.from_payload(p.id, p.payload or {}),
                float(p.score),
                {method: float(p.score)},
            )
            for p in response.points
        ]
