"""Wires retrieval from settings: store, embedder, reranker, searcher, ingestor.

The composition root (``api.compose``) opens one `Retrieval` in each process that runs
the retrieval role and hands its parts to that role's handler (ingest, gather, and the
searches the gateway's ``search_docs`` sends over the bus). The embedded store (Qdrant
Edge) locks its folder: one process owns it; with a Qdrant server any number may.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from retrieval.chunking import ChunkingConfig
from retrieval.edge_store import EdgeStore
from retrieval.embedders import make_embedder
from retrieval.ingest import Ingestor
from retrieval.ports import Embedder, Reranker, VectorStore
from retrieval.rerankers import make_reranker
from retrieval.search import SearchConfig, Searcher
from retrieval.store import QdrantStore

if TYPE_CHECKING:
    from retrieval.settings import RetrievalSettings


def qdrant_path(settings: RetrievalSettings) -> Path:
    """The embedded store's folder: ``qdrant_path`` or ``<data_dir>/vectors``."""
    return settings.qdrant_path or settings.data_dir / "vectors"


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

    store: VectorStore
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
    """Open the store (a Qdrant server if ``qdrant_url``, else the embedded folder) and
    build the parts.

    Raises:
        StoreLocked: the embedded store's folder is open in another process.
        CollectionMismatch: the collection was built with another vector size.
    """
    key = settings.qdrant_api_key
    store: VectorStore
    if settings.qdrant_url:
        store = await QdrantStore.open(
            settings.qdrant_collection,
            url=settings.qdrant_url,
            api_key=key.get_secret_value() if key else None,
        )
    else:
        store = await EdgeStore.open(
            path or qdrant_path(settings),
            settings.qdrant_collection,
            index_threshold=settings.vector_index_threshold,
        )
    emb: Embedder | None = embedder
    try:
        emb = emb or make_embedder(settings)  # after the store: a stand-by loads nothing
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
