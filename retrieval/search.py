"""Search: embed the query, run dense / keyword / hybrid (RRF) in the store, then rerank."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from retrieval.models import Access, Hit
from retrieval.ports import Embedder, Method, Reranker, VectorStore
from retrieval.sparse import query_vector

SearchMethod = Literal["dense", "keyword", "hybrid", "hybrid+rerank"]


@dataclass(frozen=True, slots=True)
class SearchConfig:
    """Per-stage limits.

    Attributes:
        top_k: chunks returned when the caller does not say.
        max_top_k: the most chunks one search may return.
        prefetch_limit: candidates each prefetch (dense, keyword) hands to fusion.
        rerank_candidates: fused candidates the reranker reorders.
    """

    top_k: int = 5
    max_top_k: int = 20
    prefetch_limit: int = 40
    rerank_candidates: int = 20


class Searcher:
    """Runs searches for one caller at a time; stateless between calls.

    Args:
        store: the chunk collection.
        embedder: the same embedder ingestion used.
        reranker: applied after fusion (the no-op reranker keeps fusion's order).
        config: limits.
    """

    def __init__(
        self,
        store: VectorStore,
        embedder: Embedder,
        reranker: Reranker,
        config: SearchConfig = SearchConfig(),
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.reranker = reranker
        self.config = config

    async def search(
        self,
        query: str,
        access: Access,
        *,
        top_k: int | None = None,
        method: SearchMethod = "hybrid+rerank",
        embedded: list[float] | None = None,
    ) -> list[Hit]:
        """The best chunks for ``query`` that ``access`` may read, best first.

        ``hybrid+rerank`` is hybrid followed by the configured reranker (with the no-op
        reranker it equals ``hybrid``). ``embedded``: the query's vector, when the caller
        searches with it more than once (else the embedder makes it).
        """
        k = max(1, min(top_k or self.config.top_k, self.config.max_top_k))
        query = query.strip()
        if not query:
            return []
        base: Method = "hybrid" if method == "hybrid+rerank" else method
        dense = None
        if base != "keyword":
            dense = embedded or await self.embedder.embed_query(query)
        sparse = None if base == "dense" else query_vector(query)
        rerank = method == "hybrid+rerank" and self.reranker.name != "none"
        limit = max(k, self.config.rerank_candidates) if rerank else k
        hits = await self.store.search(
            access,
            method=base,
            dense=dense,
            sparse=sparse,
            limit=limit,
            prefetch_limit=max(self.config.prefetch_limit, limit),
        )
        if rerank:
            return await self.reranker.rerank(query, hits, k)
        return hits[:k]
