"""Deployment settings, read from the environment with the ``AGENTBUS_`` prefix."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Every deployment setting; an unset field takes the embedded default."""

    model_config = SettingsConfigDict(env_prefix="AGENTBUS_", env_file=None, extra="ignore")

    data_dir: Path = Field(
        default=Path(".agentbus"),
        description="Folder for embedded Redis, the SQLite store and local Qdrant.",
    )
    redis_url: str | None = Field(
        default=None,
        description="Redis 6.2+ URL; unset starts an embedded Redis under data_dir.",
    )
    database_url: str | None = Field(
        default=None,
        description="SQLAlchemy async URL; unset uses a SQLite file under data_dir.",
    )
    qdrant_url: str | None = Field(default=None, description="Qdrant server URL.")
    qdrant_path: Path | None = Field(
        default=None, description="Qdrant local-mode folder; default data_dir/qdrant."
    )
    llm: Literal["local", "scripted", "openai"] = Field(
        default="local",
        description="LLM adapter: local | scripted | openai (OpenAI-compatible endpoint).",
    )

    llm_base_url: str | None = Field(
        default=None, description="OpenAI-compatible endpoint root incl. /v1 (llm=openai)."
    )
    llm_api_key: SecretStr | None = Field(default=None, description="Bearer key (llm=openai).")
    llm_model: str | None = Field(default=None, description="Model name (llm=openai).")
    llm_token_delay_s: float = Field(
        default=0.0, ge=0, description="Per-token delay of the scripted model (llm=scripted)."
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
    egress_enabled: bool = Field(default=False, description="Tools may reach the internet.")
    allowed_egress_hosts: str = Field(
        default="", description="Comma-separated hosts; '*' = any (the SSRF guard still applies)."
    )
    tool_plugins: str = Field(
        default="",
        description=(
            "Extra gateway tools: comma-separated 'module:factory' entries; each factory is "
            "called with no arguments and returns a tool or an iterable of tools."
        ),
    )
    mcp_servers: str = Field(
        default="",
        description=(
            "MCP servers every tenant gets, as a JSON list of objects: "
            '{"name": "files", "command": ["python", "-m", "srv"]} (stdio) or '
            '{"name": "crm", "url": "https://mcp.example.com/mcp"} (streamable HTTP); '
            "see gateway.mcp.config.McpServerConfig for every field."
        ),
    )
    agent_human_gate: bool = Field(
        default=False, description="Deployment default: approve answers before they are final."
    )
    tenant: str = Field(default="local", description="Tenant of runs started from the CLI.")
    subject: str = Field(default="cli", description="Subject of runs started from the CLI.")

    shards: int = Field(default=1, ge=1, le=1024, description="Run shards (hash tags).")
    max_deliveries: int = Field(default=3, ge=1, description="Deliveries before dead-letter.")
    claim_idle_ms: int = Field(
        default=30_000, ge=100, description="Idle time before a pending step is reclaimed."
    )
    heartbeat_ms: int | None = Field(
        default=None, description="Claim keep-alive period; default claim_idle_ms / 3."
    )
    retry_backoff_ms: int = Field(default=200, ge=0, description="First in-process retry delay.")
    read_block_ms: int = Field(default=1_000, ge=1, description="XREADGROUP BLOCK time.")
    stream_maxlen: int = Field(
        default=1_000_000, ge=1_000, description="Approximate cap on each role stream."
    )
    events_maxlen: int = Field(default=10_000, ge=100, description="Cap on a run's events.")
    events_ttl_s: int = Field(
        default=86_400, ge=1, description="Seconds a run's events live after it ends."
    )
    run_ttl_s: int = Field(
        default=7 * 86_400, ge=60, description="Upper bound on a run's Redis keys' life."
    )
    max_message_bytes: int = Field(
        default=256 * 1024,
        ge=1024,
        description="Budget for one command; bulky state goes to blobs (StepContext.put_blob).",
    )
    run_deadline_s: float = Field(default=300.0, gt=0, description="Whole-run deadline.")
    drain_timeout_s: float = Field(default=30.0, ge=0, description="SIGTERM drain limit.")
    metrics_port: int | None = Field(default=None, description="Worker /metrics port.")

    # The API edge (api/). Limits of 0 switch a limit off (benchmarks, trusted setups).
    api_host: str = Field(default="127.0.0.1", description="Address `agentbus api` binds.")
    api_port: int = Field(default=8080, ge=0, le=65535, description="Port of the API.")
    api_allowed_origins: str = Field(
        default="",
        description="Comma-separated browser origins allowed on the websocket, beside the "
        "API's own; '*' allows any.",
    )
    api_max_question_chars: int = Field(
        default=32_000, ge=1, le=32_000, description="Longest question accepted (413 beyond)."
    )
    api_rate_per_minute: int = Field(
        default=120, ge=0, description="Runs a tenant may start per minute (0 = no limit)."
    )
    api_rate_burst: int = Field(default=30, ge=1, description="Runs a tenant may start at once.")
    api_max_active_runs: int = Field(
        default=32, ge=0, description="Runs a tenant may have in flight (0 = no limit)."
    )
    api_idempotency_ttl_s: int = Field(
        default=86_400, ge=60, description="How long an Idempotency-Key keeps its run."
    )
    api_key_cache_s: float = Field(
        default=5.0, ge=0, description="How long a checked API key is trusted before re-reading."
    )
    ws_max_frame_bytes: int = Field(
        default=64 * 1024, ge=1024, description="Largest websocket frame a client may send."
    )
    ws_idle_timeout_s: float = Field(
        default=300.0, gt=0, description="Close a websocket with no frames and no runs this long."
    )
    ws_buffer_events: int = Field(
        default=2_000, ge=10, description="Events queued for one slow client before it is cut off."
    )
    relay_block_ms: int = Field(
        default=5_000, ge=10, description="BLOCK of the relay's shared XREAD (re-issued on change)."
    )
    # Signed webhooks (gateway/webhooks): sent by the gateway processes' dispatcher.
    webhook_private_hosts: str = Field(
        default="",
        description="Comma-separated exact hosts (names or IPs) webhooks may reach although "
        "they are private addresses (receivers inside your network); never metadata endpoints.",
    )
    webhook_backoff_s: float = Field(
        default=5.0, gt=0, description="Delay before a failed webhook's first retry (doubling)."
    )
    webhook_backoff_max_s: float = Field(
        default=3600.0, gt=0, description="Longest delay between two webhook attempts."
    )
    webhook_retry_for_s: float = Field(
        default=86_400.0, gt=0, description="How long a webhook is retried before it fails."
    )
    webhook_timeout_s: float = Field(
        default=10.0, gt=0, le=120, description="Time a receiver has to answer one attempt."
    )
    webhook_poll_ms: int = Field(
        default=250, ge=10, description="How often the dispatcher looks for due deliveries."
    )
    log_level: str = Field(default="info")

    @property
    def heartbeat_interval_s(self) -> float:
        """Seconds between claim keep-alives for in-flight steps."""
        ms = self.heartbeat_ms if self.heartbeat_ms is not None else self.claim_idle_ms / 3
        return ms / 1000

    def resolved_database_url(self) -> str:
        """The store URL: the configured one or the embedded SQLite file."""
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{(self.data_dir / 'agentbus.db').resolve()}"
