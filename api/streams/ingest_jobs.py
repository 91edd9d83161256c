"""Document ingest jobs in Redis (`api.app.ports.IngestJobs`, `retrieval.jobs`)."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING, Any, cast

from api.catalogue import publish_removal
from bus import keys, wire
from bus.events import parse_event
from bus.runtime.groups import group_stats
from retrieval.jobs import job_status, progress_key, publish_job

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from bus.events import ClientEvent
    from bus.settings import BusSettings
    from bus.store import DocumentRecord
    from retrieval.jobs import IngestTask, Job, JobStatus

#: ``retrieval.jobs.publish_job``'s: how long a job's batches may wait to be stored.
DEFAULT_DEADLINE_S = 3600.0


class RedisIngestJobs:
    """Jobs published to the retrieval role's stream; their progress and events in Redis."""

    def __init__(self, redis: Redis, bus: BusSettings) -> None:
        self._redis = redis
        self._bus = bus

    async def publish(
        self,
        tasks: Sequence[IngestTask],
        *,
        tenant: str,
        subject: str,
        deadline_s: float = DEFAULT_DEADLINE_S,
    ) -> Job:
        """Publish a job of ``tasks``."""
        return await publish_job(
            self._redis, self._bus, tasks, tenant=tenant, subject=subject, deadline_s=deadline_s
        )

    async def consumed(self, job: Job) -> bool:
        """Whether the retrieval role's group on the job's lane has a consumer."""
        lane = keys.role_stream(keys.Role.RETRIEVAL, job.shard, keys.INGEST_LANE)
        group = keys.group_name(keys.Role.RETRIEVAL)
        return any(g.group == group and g.consumers for g in await group_stats(self._redis, lane))

    async def events(self, job: Job, *, after: str, block_ms: int) -> list[tuple[str, ClientEvent]]:
        """The job's events after ``after`` (one blocking read)."""
        stream = keys.run_events(job.job_id, job.shard)
        found: list[tuple[str, ClientEvent]] = []
        for _, entries in await self._redis.xread({stream: after}, block=block_ms) or ():
            for entry_id, fields in entries:
                found.append((entry_id.decode(), parse_event(wire.raw_data(fields))))
        return found

    async def remove(self, tenant: str, subject: str, document: DocumentRecord) -> str:
        """Publish the removal of a document's chunks."""
        return await publish_removal(self._redis, self._bus, tenant, subject, document)

    async def tenant_of(self, job_id: str) -> str | None:
        """The tenant its progress hash names."""
        shard = keys.shard_of(job_id, self._bus.shards)
        # The async client's hget is typed as sync-or-async; on this client it is awaitable.
        reply = cast(
            "Awaitable[bytes | None]", self._redis.hget(progress_key(job_id, shard), "tenant")
        )
        owner = await reply
        return None if owner is None else owner.decode()

    async def status(self, job_id: str) -> JobStatus:
        """Its counters."""
        return await job_status(self._redis, job_id, keys.shard_of(job_id, self._bus.shards))

    async def outcome(self, job_id: str) -> tuple[str | None, bool]:
        """From its last four events."""
        stream = keys.run_events(job_id, keys.shard_of(job_id, self._bus.shards))
        entries: list[Any] = await self._redis.xrevrange(stream, count=4)
        error, ended = None, False
        for _, fields in entries:
            event = parse_event(wire.raw_data(fields))
            if event.type == "error":
                error = event.message
            elif event.type == "done":
                ended = True
        return error, ended
