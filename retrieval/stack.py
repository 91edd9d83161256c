"""Wires retrieval from settings: store, embedder, reranker, searcher, ingestor.

The composition root (``api.compose``) opens one `Retrieval` per process with
`open_retrieval` and hands its parts to the gateway's ``search_docs`` tool and the
retrieval role's handler. Local Qdrant locks its folder, so in embedded mode only the
process running ``agentbus up`` may open it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from retrieval.chunking import ChunkingConfig
from retrieval.embedders import make_embedder
from retrieval.ingest import Ingestor
from retrieval.ports import Embedder, Reranker
from retrieval.rerankers import make_reranker
from retrieval.search import SearchConfig, Searcher
from retrieval.store import QdrantStore

if TYPE_CHECKING:
    from retrieval.settings import RetrievalSettings


def qdrant_path(settings: RetrievalSettings) -> Path:
    """The local-mode folder: ``qdrant_path`` or ``<data_dir>/qdrant``."""
    return settings.qdrant_path or settings.data_dir / "qdrant"


def chunking_config(settings: RetrievalSettings) -> ChunkingConfig:
    """Chunk size and overlap from the settings."""
    return ChunkingConfig(settings.chunk_max_chars, settings.chunk_overlap_chars)


def search_config(settings: RetrievalSettings) -> SearchConfig:
    """Search limits from the settings."""
    return SearchConfig(
        top_k=settings.retrieval_top_k,
        prefetch_limit=settings.retrieval_prefetch_limit,
        rerank_candidates=settings.retrieval_rerank_candidates,
    )


@dataclass
class Retrieval:
    """One process's retrieval parts, sharing one store connection."""

    store: QdrantStore
    embedder: Embedder
    reranker: Reranker
    searcher: Searcher
    ingestor: Ingestor
    chunking: ChunkingConfig


@contextlib.asynccontextmanager
async def open_retrieval(
    settings: RetrievalSettings,
    *,
    embedder: Embedder | None = None,
    reranker: Reranker | None = None,
    path: Path | None = None,
) -> AsyncGenerator[Retrieval]:
    """Open the store (server if ``qdrant_url``, else local folder) and build the parts.

    Raises:
        StoreLocked: local mode and another process holds the folder.
        CollectionMismatch: the collection was built with another vector size.
    """
    emb = embedder or make_embedder(settings)
    key = settings.qdrant_api_key
    store = await QdrantStore.open(
        settings.qdrant_collection,
        url=settings.qdrant_url,
        path=None if settings.qdrant_url else (path or qdrant_path(settings)),
        api_key=key.get_secret_value() if key else None,
    )
    try:
        ingestor = Ingestor(store, emb)
        await ingestor.ready()
        rr = reranker or make_reranker(settings.reranker)
        searcher = Searcher(store, emb, rr, search_config(settings))
        yield Retrieval(store, emb, rr, searcher, ingestor, chunking_config(settings))
    finally:
        await store.aclose()
        close = getattr(emb, "aclose", None)
        if close is not None:
            await close()
