"""Retrieval's settings: the vector store, the embedder and reranker, search and chunking."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr

from bus.settings import EnvSettings


class RetrievalSettings(EnvSettings):
    """Qdrant, embeddings, reranking, search limits and chunking (``AGENTBUS_QDRANT_*`` etc.)."""

    qdrant_url: str | None = Field(default=None, description="Qdrant server URL.")
    qdrant_path: Path | None = Field(
        default=None,
        description="The embedded vector store's folder (Qdrant Edge); default data_dir/vectors.",
    )
    vector_index_threshold: int = Field(
        default=20_000,
        ge=1,
        description="Embedded store: unindexed chunks that start an HNSW build (in a child "
        "process, once writes pause); below it a query scans them in a few ms.",
    )
    store_standby_poll_s: float = Field(
        default=1.0,
        gt=0,
        description="Embedded store: how often a retrieval process that waits for the "
        "store's lock (another process owns it) tries again.",
    )
    qdrant_collection: str = Field(
        default="agentbus_chunks",
        pattern=r"^[A-Za-z0-9_-]{1,64}$",
        description="The one Qdrant collection of this deployment (every tenant's chunks).",
    )
    qdrant_api_key: SecretStr | None = Field(default=None, description="Qdrant server key.")
    embedder: Literal["local", "openai", "hashing"] = Field(
        default="local",
        description="Embedder: local (MiniLM ONNX) | openai (compatible /embeddings) | hashing.",
    )
    embedding_base_url: str | None = Field(
        default=None, description="OpenAI-compatible root incl. /v1 (embedder=openai)."
    )
    embedding_api_key: SecretStr | None = Field(default=None, description="(embedder=openai)")
    embedding_model: str | None = Field(default=None, description="Model (embedder=openai).")
    embedding_dim: int | None = Field(
        default=None, ge=1, description="Vector size (embedder=openai; e.g. 1536)."
    )
    reranker: Literal["none", "nanoranker"] = Field(
        default="none", description="Reranker after fusion: none | nanoranker (ONNX, offline)."
    )
    retrieval_top_k: int = Field(default=5, ge=1, le=50, description="Chunks search returns.")
    retrieval_prefetch_limit: int = Field(
        default=40, ge=1, le=1000, description="Candidates per prefetch (dense, keyword)."
    )
    retrieval_rerank_candidates: int = Field(
        default=20, ge=1, le=200, description="Fused candidates the reranker sees."
    )
    chunk_max_chars: int = Field(default=1000, ge=200, le=8000, description="Chunk size cap.")
    chunk_overlap_chars: int = Field(
        default=150, ge=0, le=2000, description="Trailing sentences repeated in the next chunk."
    )
    ingest_batch_chunks: int = Field(
        default=64, ge=1, le=512, description="Chunks per ingest message on the bus."
    )
    graph_extractor: Literal["auto", "model", "rules", "none"] = Field(
        default="auto",
        description="Knowledge graph: how facts are extracted at ingest: auto (the chat model "
        "where it was measured better than the rules, else the rules) | model (the chat model "
        "under a JSON schema) | rules (spaCy's dependency parse, English and French, a few ms "
        "a chunk) | none (no facts, no graph source or query_graph tool).",
    )
    graph_hops: int = Field(
        default=2, ge=1, le=2, description="Knowledge graph: hops a query walks (1 or 2)."
    )
    graph_top_k: int = Field(
        default=5, ge=1, le=20, description="Knowledge graph: passages a query returns."
    )
