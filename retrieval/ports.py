"""Ports of retrieval: the embedder, the reranker, the vector store and the fact extractor.

One adapter per file: embedders under ``retrieval/embedders/``, rerankers under
``retrieval/rerankers/``, stores in ``retrieval/edge_store.py`` (embedded Qdrant Edge) and
``retrieval/store.py`` (a Qdrant server), the rule-based fact extractor in
``retrieval/graph/rules.py`` (a model-based one is injected from ``agents``). Every embedder passes
``tests/contracts/embedder.py``; every store passes
``tests/contracts/vector_store.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol, runtime_checkable

from bus.store.facts import Triple
from retrieval.models import Access, Hit, StoredChunk
from retrieval.sparse import SparseVec

#: How a store ranks: the dense vector, the keyword (sparse) vector, or both fused (RRF).
Method = Literal["dense", "keyword", "hybrid"]


@runtime_checkable
class Embedder(Protocol):
    """Turns text into dense vectors of a fixed size, L2-normalised."""

    @property
    def name(self) -> str:
        """Model id, recorded so a collection is never mixed across embedders."""
        ...

    @property
    def dim(self) -> int:
        """Vector size."""
        ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order (documents; batched inside the adapter).

        Raises:
            EmbedderUnavailable: the model cannot be loaded.
            EmbedderFailed: the call failed or returned vectors of the wrong size.
        """
        ...

    async def embed_query(self, text: str) -> list[float]:
        """The vector of a search query."""
        ...


@runtime_checkable
class Reranker(Protocol):
    """Reorders fused candidates by relevance to the query."""

    @property
    def name(self) -> str:
        """Reranker id (``none`` for the no-op)."""
        ...

    async def rerank(self, query: str, hits: Sequence[Hit], top_k: int) -> list[Hit]:
        """The best ``top_k`` of ``hits`` for ``query``, best first.

        Raises:
            RerankerUnavailable: the model cannot be loaded.
        """
        ...


@runtime_checkable
class VectorStore(Protocol):
    """The chunk collection: named dense + sparse vectors, tenant and ACL in every payload.

    Every read takes an `Access` and filters by tenant and ACL inside each stage of the
    query (each prefetch of a hybrid search), so a chunk the caller may not read never
    reaches fusion or the reranker.
    """

    async def ensure_collection(self, dim: int, embedder: str) -> None:
        """Create the collection if missing; check its dense vector size.

        Raises:
            CollectionMismatch: it exists with another dense vector size.
        """
        ...

    async def versions(self, ids: Sequence[str]) -> dict[str, tuple[str, tuple[str, ...]]]:
        """Stored (version, acl) of the points among ``ids`` that exist."""
        ...

    async def upsert(
        self,
        chunks: Sequence[StoredChunk],
        dense: Sequence[list[float]],
        sparse: Sequence[SparseVec],
    ) -> None:
        """Write chunks with their vectors (same order in all three)."""
        ...

    async def relabel(self, ids: Sequence[str], version: str, acl: Sequence[str]) -> None:
        """Move existing points to a new document version and ACL (no re-embedding)."""
        ...

    async def delete_document(
        self, tenant: str, doc_id: str, *, keep_version: str | None = None
    ) -> int:
        """Delete a document's chunks (those of other versions than ``keep_version``)."""
        ...

    async def count(self, tenant: str | None = None) -> int:
        """Points stored (of one tenant, or all)."""
        ...

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

        Hybrid fuses a dense and a keyword prefetch with RRF (k=2, Qdrant's default); an
        empty keyword query falls back to dense, and a keyword search with no terms finds
        nothing.
        """
        ...

    async def aclose(self) -> None:
        """Release the store (a local folder's lock, threads, connections)."""
        ...


@runtime_checkable
class FactExtractor(Protocol):
    """Finds (subject, relation, object) facts in chunks of text, for the knowledge graph."""

    @property
    def name(self) -> str:
        """Extractor id (``rules``, ``model``)."""
        ...

    async def extract(self, texts: Sequence[str]) -> list[list[Triple]]:
        """The facts of each text, in order (an empty list for a text stating none)."""
        ...
