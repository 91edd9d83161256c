"""Ingest jobs on the bus: split prepared documents into messages, track their progress.

A job is a run-like id whose messages go to the retrieval role's ingest lane (one shard
per job, like a run; a lane of its own so a large job does not queue searches), so
several retrieval workers share a large ingest and the runtime's
exactly-once steps, retries and dead letters apply. Progress lives in Redis under the
job's run keys (``keys.run_blob``), expiring with them; the last batch writes a ``done``
event to the job's event stream, a dead-lettered batch an ``error`` + ``done`` one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bus import keys, wire
from bus.commands import Command, IngestChunk, IngestTask, deadline_in, new_run_id
from bus.runtime.groups import ensure_group
from bus.typed_redis import queued
from retrieval.ingest import PreparedDocument

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from bus.settings import BusSettings

#: Bytes of a message kept for everything but the chunk texts (envelope, doc header).
_ENVELOPE_BYTES = 8_192


def progress_key(job_id: str, shard: int) -> str:
    """Hash of a job's counters (total, embedded, relabelled, unchanged, deleted, facts...)."""
    return keys.run_blob(job_id, shard, "ingest")


def done_key(job_id: str, shard: int) -> str:
    """Set of the job's finished step ids (idempotent progress)."""
    return keys.run_blob(job_id, shard, "ingest:done")


def doc_key(job_id: str, shard: int, doc_id: str) -> str:
    """Set of a document's stored batch numbers (the last one deletes old versions)."""
    return keys.run_blob(job_id, shard, f"ingest:doc:{doc_id}")


def split_tasks(
    docs: Sequence[PreparedDocument], *, batch_chunks: int, max_bytes: int
) -> list[IngestTask]:
    """Each document's chunks in batches of at most ``batch_chunks`` and ~``max_bytes``."""
    budget = max(1024, max_bytes - _ENVELOPE_BYTES)
    tasks: list[IngestTask] = []
    for doc in docs:
        groups: list[list[IngestChunk]] = [[]]
        size = 0
        for c in doc.chunks:
            item = IngestChunk(position=c.position, heading=c.heading, text=c.text)
            cost = len(item.model_dump_json().encode())
            if groups[-1] and (len(groups[-1]) >= batch_chunks or size + cost > budget):
                groups.append([])
                size = 0
            groups[-1].append(item)
            size += cost
        for n, group in enumerate(groups):
            tasks.append(IngestTask(doc=doc.header(n, len(groups)), chunks=group))
    return tasks


@dataclass(frozen=True, slots=True)
class Job:
    """A published ingest job."""

    job_id: str
    shard: int
    total: int


async def publish_job(
    redis: Redis,
    settings: BusSettings,
    tasks: Sequence[IngestTask],
    *,
    tenant: str,
    subject: str,
    deadline_s: float = 3600.0,
    groups: Sequence[str] = (),
) -> Job:
    """Publish every batch of a job onto the retrieval stream; returns the job."""
    job_id = new_run_id()
    shard = keys.shard_of(job_id, settings.shards)
    deadline = deadline_in(deadline_s)
    stream = keys.role_stream(keys.Role.RETRIEVAL, shard, keys.INGEST_LANE)
    progress = progress_key(job_id, shard)
    # Create the group first: a worker starting later creates it at "$" and would skip
    # entries published before it existed.
    await ensure_group(redis, stream, keys.group_name(keys.Role.RETRIEVAL))
    async with redis.pipeline(transaction=False) as pipe:
        queued(pipe).hset(progress, mapping={"total": len(tasks), "tenant": tenant})
        pipe.expire(progress, settings.run_ttl_s)
        for step, task in enumerate(tasks, 1):
            command = Command(
                run_id=job_id,
                tenant_id=tenant,
                subject=subject,
                shard=shard,
                role=keys.Role.RETRIEVAL,
                step=step,
                deadline=deadline,
                groups=tuple(groups),
                payload=task,
            )
            pipe.xadd(
                stream, {wire.DATA_FIELD: wire.encode(command)}, maxlen=settings.stream_maxlen
            )
        await pipe.execute()
    return Job(job_id, shard, len(tasks))


@dataclass(frozen=True, slots=True)
class JobStatus:
    """Where an ingest job stands (``total`` is 0 for an unknown or expired job).

    ``done`` counts distinct batches (exact); the chunk counters are bumped once per
    delivery, so a batch redelivered after a crash adds its chunks to ``unchanged`` again.
    """

    job_id: str
    total: int
    done: int
    embedded: int
    relabelled: int
    unchanged: int
    deleted: int
    documents: int
    facts: int = 0

    @property
    def finished(self) -> bool:
        """Every batch was stored."""
        return self.total > 0 and self.done >= self.total


async def job_status(redis: Redis, job_id: str, shard: int) -> JobStatus:
    """Read a job's progress (for the CLI's progress bar and the API's job status)."""
    async with redis.pipeline(transaction=False) as pipe:
        queued(pipe).hgetall(progress_key(job_id, shard))
        pipe.scard(done_key(job_id, shard))
        raw, done = await pipe.execute()
    fields = {k.decode(): v.decode() for k, v in raw.items()}

    def n(name: str) -> int:
        return int(fields.get(name, 0))

    return JobStatus(
        job_id,
        n("total"),
        int(done),
        n("embedded"),
        n("relabelled"),
        n("unchanged"),
        n("deleted"),
        n("documents"),
        n("facts"),
    )
