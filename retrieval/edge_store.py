"""The embedded vector store: Qdrant Edge (Qdrant's engine in-process), one folder.

The same collection shape as on a Qdrant server (`retrieval.store`): a named dense vector
(cosine) and a named sparse keyword vector with the IDF modifier, payload indexes on
tenant (as the tenant key), acl and doc_id, the tenant/ACL filter inside every prefetch,
RRF with Qdrant's k=2. Edge scans new points in Rust (~2 ms for a hybrid query over 10,000
chunks here) and builds HNSW graphs when asked to optimize; `retrieval.edge_index` does
that in a child process (see there), because Edge's ``optimize`` holds the GIL.

The folder belongs to one process: a lock file is taken on open (and Edge locks its WAL
besides); a second process gets `StoreLocked`. Layout of ``<root>``::

    .lock            held while a process has the store open
    <collection>/
      meta.json      embedder and vector size the collection was built with
      CURRENT        the live generation's folder name
      g<N>/          an Edge shard (a rebuild writes g<N+1>, then CURRENT moves)

Every shard call runs on one private thread: calls are serialised (Edge's writes and
reads hold the GIL anyway) and the event loop only waits for them.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import shutil
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any, TypeVar

import qdrant_edge as qe

from retrieval.edge_index import EdgeIndexer
from retrieval.errors import CollectionMismatch, StoreLocked, StoreUnavailable
from retrieval.models import Access, Hit, StoredChunk
from retrieval.ports import Method
from retrieval.sparse import SparseVec

T = TypeVar("T")
DENSE = "dense"
KEYWORD = "keyword"
#: Qdrant's default RRF constant (the server's, and qdrant-client's local mode's).
RRF_K = 2
_INDEXES: dict[str, Any] = {
    "tenant": qe.KeywordIndexParams(is_tenant=True),
    "acl": qe.PayloadSchemaType.Keyword,
    "doc_id": qe.PayloadSchemaType.Keyword,
}


def edge_filter(access: Access) -> qe.Filter:
    """Tenant equals the caller's, and the ACL lists one of the caller's groups or ``*``."""
    return qe.Filter(
        must=[
            qe.FieldCondition("tenant", match=qe.MatchValue(access.tenant)),
            qe.FieldCondition("acl", match=qe.MatchAny(access.readable_acl())),
        ]
    )


def _sparse(vec: SparseVec) -> qe.SparseVector:
    return qe.SparseVector(list(vec.indices), list(vec.values))


def lock_folder(root: Path) -> IO[str]:
    """Take the store folder's lock (held until the handle closes).

    Raises:
        StoreLocked: another process holds it.
    """
    import portalocker

    root.mkdir(parents=True, exist_ok=True)
    handle = (root / ".lock").open("a+")
    try:
        portalocker.lock(
            handle, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING
        )
    except portalocker.exceptions.LockException as e:
        handle.close()
        raise StoreLocked(f"the embedded vector store {root} is open in another process") from e
    return handle


class EdgeStore:
    """The chunk collection in a Qdrant Edge folder. Build with `open`; close with `aclose`."""

    def __init__(self, folder: Path, lock: IO[str], pool: ThreadPoolExecutor) -> None:
        self.folder = folder
        self._lock = lock
        self._pool = pool
        self._shard: qe.EdgeShard | None = None
        self.indexer = EdgeIndexer(self)
        #: Edge's own threshold (KB of vectors) below which a segment gets no HNSW; None
        #: keeps Edge's default (~6,500 vectors of 384 floats). Tests lower it.
        self.segment_index_kb: int | None = None

    @classmethod
    async def open(
        cls,
        root: Path,
        collection: str,
        *,
        index_threshold: int = 20_000,
        segment_index_kb: int | None = None,
    ) -> EdgeStore:
        """Open (or start) the store under ``root``; the collection lives in a subfolder.

        Args:
            root: the folder (locked while open).
            collection: the collection's subfolder.
            index_threshold: unindexed points that start an HNSW build (`EdgeIndexer`).
            segment_index_kb: Edge's per-segment indexing threshold for a new collection.

        Raises:
            StoreLocked: another process has the folder open.
            StoreUnavailable: the folder cannot be read as an Edge shard.
        """
        lock = lock_folder(root)
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="edge")
        store = cls(root / collection, lock, pool)
        store.indexer.threshold = index_threshold
        store.segment_index_kb = segment_index_kb
        try:
            await store.run(store.load_current)
        except BaseException:
            pool.shutdown(wait=False)
            lock.close()
            raise
        store.indexer.start(store._shard)
        return store

    # --- the live shard (called on the store's thread) --------------------------------

    def current_dir(self) -> Path | None:
        """The live generation's folder, if the collection exists."""
        current = self.folder / "CURRENT"
        if not current.exists():
            return None
        return self.folder / current.read_text().strip()

    def load_current(self) -> None:
        """Load the live generation and remove any left over by an interrupted rebuild."""
        live = self.current_dir()
        if live is None:
            return
        for stale in self.folder.glob("g*"):
            if stale.is_dir() and stale != live:
                shutil.rmtree(stale, ignore_errors=True)
        try:
            self._shard = qe.EdgeShard.load(str(live), None)
        except Exception as e:  # Edge raises plain Exceptions
            if "WouldBlock" in str(e):
                raise StoreLocked(f"the vector store {live} is open in another process") from e
            raise StoreUnavailable(f"cannot open the vector store {live}: {e}") from e

    def swap(self, shard: qe.EdgeShard, generation: Path) -> None:
        """Make ``shard`` (in ``generation``) the live one; close and delete the old one."""
        old, old_dir = self._shard, self.current_dir()
        self._shard = shard
        tmp = self.folder / "CURRENT.tmp"
        tmp.write_text(generation.name)
        os.replace(tmp, self.folder / "CURRENT")
        if old is not None:
            old.close()
        if old_dir is not None and old_dir != generation:
            shutil.rmtree(old_dir, ignore_errors=True)

    def copy_live(self, target: Path) -> int:
        """Copy the collection as it is now (flushed) into ``target``; the points copied.

        Store thread only: no write, rebuild or swap interleaves.
        """
        live = self.current_dir()
        target.mkdir(parents=True)
        if live is None:
            return 0
        shard = self.live()
        shard.flush()
        for name in ("meta.json", "CURRENT"):
            shutil.copy2(self.folder / name, target / name)
        shutil.copytree(live, target / live.name)
        return shard.count(qe.CountRequest(exact=True))

    def live(self) -> qe.EdgeShard:
        """The live shard (the collection must exist: `ensure_collection` first)."""
        if self._shard is None:
            raise StoreUnavailable("the vector store has no collection yet")
        return self._shard

    def apply(self, *ops: qe.UpdateOperation) -> None:
        """Apply writes to the live shard (and to the rebuild's log while one runs)."""
        shard = self.live()
        for op in ops:
            shard.update(op)
        self.indexer.record(ops)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn`` on the store's thread."""
        call = functools.partial(fn, *args)
        return await asyncio.get_running_loop().run_in_executor(self._pool, call)

    # --- the port ----------------------------------------------------------------------

    async def aclose(self) -> None:
        """Stop indexing, close the shard (flushing it) and release the folder."""
        await self.indexer.stop()

        def close() -> None:
            if self._shard is not None:
                self._shard.flush()
                self._shard.close()
                self._shard = None

        await self.run(close)
        self._pool.shutdown(wait=True)
        self._lock.close()

    async def ensure_collection(self, dim: int, embedder: str) -> None:
        """Create the collection (shard, payload indexes) if missing; check the vector size.

        Raises:
            CollectionMismatch: it exists with another dense vector size.
        """
        meta = self.folder / "meta.json"
        if self._shard is not None and meta.exists():
            built = json.loads(meta.read_text())
            if built.get("dim") != dim:
                raise CollectionMismatch(
                    f"collection {self.folder.name!r} holds {built.get('dim')}-dim vectors "
                    f"({built.get('embedder', 'another embedder')}); the embedder "
                    f"{embedder!r} makes {dim}-dim ones"
                )
            return

        def create() -> None:
            self.folder.mkdir(parents=True, exist_ok=True)
            generation = self.folder / "g1"
            shutil.rmtree(generation, ignore_errors=True)
            config = qe.EdgeConfig(
                vectors={DENSE: qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine)},
                sparse_vectors={KEYWORD: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
                optimizers=qe.EdgeOptimizersConfig(indexing_threshold=self.segment_index_kb),
            )
            shard = qe.EdgeShard.create(str(generation), config)
            for field, schema in _INDEXES.items():
                shard.update(qe.UpdateOperation.create_field_index(field, schema))
            meta.write_text(json.dumps({"embedder": embedder, "dim": dim}))
            self.swap(shard, generation)

        await self.run(create)

    async def versions(self, ids: Sequence[str]) -> dict[str, tuple[str, tuple[str, ...]]]:
        """Stored (version, acl) of the points among ``ids`` that exist."""
        if not ids:
            return {}
        selector = qe.PayloadSelector.Include(["version", "acl"])
        records = await self.run(lambda: self.live().retrieve(list(ids), selector, False))
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
            qe.Point(c.id, {DENSE: list(d), KEYWORD: _sparse(s)}, c.payload())
            for c, d, s in zip(chunks, dense, sparse, strict=True)
        ]
        if points:
            await self.run(self.apply, qe.UpdateOperation.upsert_points(points))
            self.indexer.wrote(len(points))

    async def relabel(self, ids: Sequence[str], version: str, acl: Sequence[str]) -> None:
        """Move existing points to a new document version and ACL (no re-embedding)."""
        if ids:
            payload = {"version": version, "acl": list(acl)}
            await self.run(self.apply, qe.UpdateOperation.set_payload(list(ids), payload))

    async def delete_document(
        self, tenant: str, doc_id: str, *, keep_version: str | None = None
    ) -> int:
        """Delete a document's chunks (those of other versions than ``keep_version``)."""
        flt = qe.Filter(
            must=[
                qe.FieldCondition("tenant", match=qe.MatchValue(tenant)),
                qe.FieldCondition("doc_id", match=qe.MatchValue(doc_id)),
            ],
            must_not=[qe.FieldCondition("version", match=qe.MatchValue(keep_version))]
            if keep_version
            else None,
        )

        def delete() -> int:
            stale = self.live().count(qe.CountRequest(exact=True, filter=flt))
            if stale:
                self.apply(qe.UpdateOperation.delete_points_by_filter(flt))
            return stale

        return await self.run(delete)

    async def count(self, tenant: str | None = None) -> int:
        """Points stored (of one tenant, or all)."""
        flt = (
            qe.Filter(must=[qe.FieldCondition("tenant", match=qe.MatchValue(tenant))])
            if tenant
            else None
        )
        if self._shard is None:
            return 0
        return await self.run(lambda: self.live().count(qe.CountRequest(exact=True, filter=flt)))

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
        """The best ``limit`` chunks ``access`` may read, by ``method`` (see the port)."""
        if self._shard is None:
            return []
        flt = edge_filter(access)
        use_sparse = sparse is not None and not sparse.empty
        if method == "keyword" or (method == "hybrid" and dense is None):
            if not use_sparse:
                return []
            assert sparse is not None
            query = qe.Query.Nearest(_sparse(sparse), using=KEYWORD)
            request = qe.QueryRequest(limit=limit, query=query, filter=flt, with_payload=True)
        elif method == "dense" or not use_sparse:
            assert dense is not None
            query = qe.Query.Nearest(list(dense), using=DENSE)
            request = qe.QueryRequest(limit=limit, query=query, filter=flt, with_payload=True)
        else:
            assert sparse is not None and dense is not None
            prefetches = [
                qe.Prefetch(
                    limit=prefetch_limit,
                    query=qe.Query.Nearest(list(dense), using=DENSE),
                    filter=flt,
                ),
                qe.Prefetch(
                    limit=prefetch_limit,
                    query=qe.Query.Nearest(_sparse(sparse), using=KEYWORD),
                    filter=flt,
                ),
            ]
            # Fusion ranks only what the filtered prefetches returned: no outer filter.
            # (The 0.9.0 stubs list `Fusion`, not its `Fusion.Rrf`, among query types.)
            rrf: Any = qe.Fusion.Rrf(k=RRF_K)
            request = qe.QueryRequest(
                limit=limit, prefetches=prefetches, query=rrf, with_payload=True
            )
        try:
            points = await self.run(lambda: self.live().query(request))
        except Exception as e:  # Edge raises plain Exceptions
            raise StoreUnavailable(f"the vector store failed a search: {e}") from e
        return [
            Hit(
                StoredChunk.from_payload(p.id, p.payload or {}),
                float(p.score),
                {method: float(p.score)},
            )
            for p in points
        ]
