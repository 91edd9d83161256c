"""Settings read from the environment with the ``AGENTBUS_`` prefix: the base, and the bus's.

Each package has its own settings class (``agents.settings``, ``retrieval.settings``,
``gateway.settings``, ``api.settings``); every one reads ``AGENTBUS_<FIELD>``, and the
process's composition root (``api.compose.settings``) builds them and hands each package
only its own.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from bus.retention import RetentionPolicy

#: The shard count on a Redis Cluster when AGENTBUS_SHARDS is unset: one shard on each
#: master of an evenly split 3-master cluster (`bus.keys.SHARD_TAGS`). Every shard costs
#: each role a blocking read of its own, and reads that find fewer entries each.
CLUSTER_SHARDS = 3


class EnvSettings(BaseSettings):
    """What every package's settings share: the ``AGENTBUS_`` prefix and the data folder."""

    model_config = SettingsConfigDict(env_prefix="AGENTBUS_", env_file=None, extra="ignore")

    data_dir: Path = Field(
        default=Path(".agentbus"),
        description="Folder for embedded Redis, the SQLite store, local Qdrant, the model cache.",
    )


class BusSettings(EnvSettings):
    """The broker, the state store and the worker runtime; an unset field takes the default."""

    redis_url: str | None = Field(
        default=None,
        description="Redis 6.2+ URL; unset starts an embedded Redis under data_dir.",
    )
    database_url: str | None = Field(
        default=None,
        description="SQLAlchemy async URL; unset uses a SQLite file under data_dir.",
    )
    redis_cluster: bool = Field(
        default=False,
        description="redis_url names a node of a Redis Cluster; talk to it as a cluster.",
    )
    redis_wait_replicas: int = Field(
        default=0,
        ge=0,
        description="Replicas that must acknowledge a step's commit and a side-effecting "
        "call's claim (WAIT) before they count; unset on a cluster: 1.",
    )
    redis_wait_timeout_ms: int = Field(
        default=2_000, ge=1, description="How long a commit waits for those replicas."
    )
    shards: int = Field(
        default=1,
        ge=1,
        le=1024,
        description=f"Run shards (hash tags); unset on a cluster: {CLUSTER_SHARDS}.",
    )
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
    fair_share: bool = Field(
        default=True,
        description="Admit new runs by weighted fair share across tenants (bus.fairshare); "
        "off: straight onto the intake stream, first come first served.",
    )
    fair_depth: float = Field(
        default=1.0,
        gt=0,
        le=100,
        description="Runs admitted per shard at once, per researcher step in flight the live "
        "researcher workers can take.",
    )
    fair_inflight: int = Field(
        default=0,
        ge=0,
        description="Runs admitted per shard at once, fixed (0: from the live researchers "
        "and fair_depth).",
    )
    fair_max_pending: int = Field(
        default=1_000,
        ge=1,
        description="Runs one tenant may have waiting per shard; more are refused (429 "
        "tenant_queue_full, Retry-After).",
    )
    drain_timeout_s: float = Field(default=30.0, ge=0, description="SIGTERM drain limit.")
    metrics_port: int | None = Field(default=None, description="Worker /metrics port.")
    log_level: str = Field(default="info")
    retention: RetentionPolicy = Field(
        default_factory=RetentionPolicy,
        description='Days each kind is kept when a tenant set none, as JSON, e.g. {"runs": 90, '
        '"audit": 365} (kinds: runs, messages, checkpoints, blobs, audit); unset keeps all.',
    )
    retention_interval_s: float = Field(
        default=3600.0,
        ge=0,
        description="Seconds between retention passes in `up` and the workers (0: none).",
    )
    retention_batch: int = Field(
        default=500, ge=1, le=10_000, description="Rows one retention or erasure batch deletes."
    )
    erasure_wait_s: float = Field(
        default=60.0,
        gt=0,
        description="How long an erasure waits for the user's steps in flight to end before "
        "it answers erasure_incomplete (the user stays fenced; erase again).",
    )
    erasure_fence_s: int = Field(
        default=7 * 86_400,
        ge=60,
        description="How long an erased user's steps still commit nothing, in every process "
        "(longer than any run lives); their id cannot get a key meanwhile.",
    )

    @model_validator(mode="after")
    def _cluster_shards(self) -> BusSettings:
        # Every process of a deployment computes the same count: it depends on settings only.
        if self.redis_cluster and "shards" not in self.model_fields_set:
            self.shards = CLUSTER_SHARDS
        # A cluster has replicas to fail over to: a claim only its dead master held would
        # let a side-effecting tool run again on the new one. Set 0 for a cluster without.
        if self.redis_cluster and "redis_wait_replicas" not in self.model_fields_set:
            self.redis_wait_replicas = 1
        return self

    @property
    def heartbeat_interval_s(self) -> float:
        """Seconds between claim keep-alives for in-flight steps."""
        ms = self.heartbeat_ms if self.heartbeat_ms is not None else self.claim_idle_ms / 3
        return ms / 1000

    def private_paths(self) -> tuple[Path, ...]:
        """Where this deployment keeps data no tool may read: the data folder (embedded
        Redis, the local key, the vector store) and a SQLite store's files."""
        paths = [self.data_dir.resolve()]
        url = self.resolved_database_url()
        if url.startswith("sqlite") and ":///" in url:
            db = Path(url.split(":///", 1)[1]).resolve()
            paths += [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")]
        return tuple(dict.fromkeys(paths))

    def resolved_database_url(self) -> str:
        """The store URL: the configured one or the embedded SQLite file."""
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{(self.data_dir / 'agentbus.db').resolve()}"
