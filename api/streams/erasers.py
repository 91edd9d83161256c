"""The erasers of `api.app.erasure`, one per store that holds a user's data."""

from __future__ import annotations

from typing import TYPE_CHECKING

from api.app.erasure import ErasureTarget
from api.app.errors import ErasureIncomplete
from api.catalogue import publish_removal
from bus import keys, tenant_versions
from bus.forget import forget_runs, scrub_streams, shared_streams
from bus.publish import request_cancel
from bus.quiesce import Whose, quiesce

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from bus.fence import Fence
    from bus.settings import BusSettings
    from bus.store import AuditStore, ErasureStore, MemoryStore


class FenceEraser:
    """First: fence the user (`bus.fence`), so no step of theirs commits from now on."""

    settles = False

    def __init__(self, fence: Fence, redis: Redis, bus: BusSettings) -> None:
        self._fence = fence
        self._redis = redis
        self._bus = bus

    async def erase(self, target: ErasureTarget) -> dict[str, int]:
        """Set the user's fence key on every shard."""
        await self._fence.raise_for(
            self._redis,
            target.tenant_id,
            target.subject,
            shards=self._bus.shards,
            ttl_s=self._bus.erasure_fence_s,
        )
        return {}


class KeysEraser:
    """The user's API keys: deleted, and every API process told to read its cached keys of
    the tenant again (the tenant's settings version), so none of them works anywhere."""

    settles = False

    def __init__(self, store: ErasureStore, batch: int, redis: Redis, shards: int) -> None:
        self._store = store
        self._batch = batch
        self._redis = redis
        self._shards = shards

    async def erase(self, target: ErasureTarget) -> dict[str, int]:
        """Delete the keys, then bump the version (after the delete is committed)."""
        n = await self._store.erase_keys(target.tenant_id, target.subject, self._batch)
        await tenant_versions.bump(self._redis, target.tenant_id, shards=self._shards)
        return {"api_keys": n}


class InFlightEraser:
    """The user's work in flight: their runs cancelled, their steps under way waited for
    and their queued entries deleted (`bus.quiesce`), before anything is deleted."""

    settles = True

    def __init__(self, redis: Redis, bus: BusSettings, *, idle_ms: int | None = None) -> None:
        self._redis = redis
        self._bus = bus
        self._idle_ms = bus.claim_idle_ms if idle_ms is None else idle_ms

    async def erase(self, target: ErasureTarget) -> dict[str, int]:
        """Cancel, then wait; raise `ErasureIncomplete` if steps still run at the end."""
        held = target.holdings
        for run_id in held.in_flight:
            await request_cancel(self._redis, run_id, self._bus)
        whose = Whose(
            [*held.run_ids, *(d.job_id for d in held.documents)],
            target.tenant_id,
            target.subject,
        )
        done = await quiesce(
            self._redis,
            shared_streams(self._bus.shards),
            whose,
            idle_ms=self._idle_ms,
            wait_s=self._bus.erasure_wait_s,
        )
        if done.still_held:
            raise ErasureIncomplete(
                f"{done.still_held} step(s) of this user were still running after "
                f"{self._bus.erasure_wait_s:g} s; their keys are revoked and nothing of "
                "theirs commits any more, but nothing was deleted yet"
            )
        return {
            "runs_cancelled": len(held.in_flight),
            "steps_waited_for": done.waited,
            "stream_entries": done.deleted + done.dropped,
        }


#: Who the removal jobs run as (not the erased user: their id would travel in the job).
JOB_SUBJECT = "erasure"


class DocumentsEraser:
    """The documents the user uploaded: their chunks leave the vector store through the
    retrieval role (an empty version of each, as deleting one does); the catalogue rows go
    with the SQL eraser."""

    settles = False

    def __init__(self, redis: Redis, bus: BusSettings) -> None:
        self._redis = redis
        self._bus = bus

    async def erase(self, target: ErasureTarget) -> dict[str, int]:
        """Publish the removal of each of the user's documents."""
        docs = target.holdings.documents
        for doc in docs:
            await publish_removal(self._redis, self._bus, target.tenant_id, JOB_SUBJECT, doc)
        return {"document_chunks": sum(d.chunks for d in docs)}


class SqlEraser:
    """The SQL store: schedules, conversations, runs, gates, document catalogue."""

    settles = False

    def __init__(self, store: ErasureStore, batch: int) -> None:
        self._store = store
        self._batch = batch

    async def erase(self, target: ErasureTarget) -> dict[str, int]:
        """Delete the user's rows in batches (see `bus.store.erasure`)."""
        return await self._store.erase(target.tenant_id, target.subject, self._batch)


class RedisEraser:
    """Redis: every key of the user's runs and ingest jobs, the entries that name them in
    shared streams, and the user's budget counters (see `bus.forget`)."""

    settles = False

    def __init__(self, redis: Redis, bus: BusSettings) -> None:
        self._redis = redis
        self._bus = bus

    async def erase(self, target: ErasureTarget) -> dict[str, int]:
        """Forget the runs' keys and scrub the shared streams."""
        held = target.holdings
        runs = [*held.run_ids, *(d.job_id for d in held.documents)]
        shards = self._bus.shards
        deleted = await forget_runs(
            self._redis, target.tenant_id, runs, shards=shards, subject=target.subject
        )
        entries = await scrub_streams(self._redis, shared_streams(shards), runs)
        return {"redis_keys": deleted, "stream_entries": entries}


class AuditEraser:
    """The audit log: the rows about the user keep their place and lose their content."""

    settles = False

    def __init__(self, audit: ErasureStore, batch: int, log: AuditStore | None) -> None:
        self._store = audit
        self._batch = batch
        self._log = log

    async def erase(self, target: ErasureTarget) -> dict[str, int]:
        """Redact the user's audit rows in batches."""
        if self._log is None:
            return {}
        n = await self._store.redact_audit(
            target.tenant_id,
            target.subject,
            target.holdings.run_ids,
            self._batch,
            target.erasure,
        )
        return {"audit_rows_redacted": n}


class MemoryEraser:
    """The user's long-term memories: one table, the only place they are kept."""

    settles = False

    def __init__(self, memories: MemoryStore, redis: Redis | None = None) -> None:
        self._memories = memories
        self._redis = redis

    async def erase(self, target: ErasureTarget) -> dict[str, int]:
        """Delete every memory of the user, and the mark that they have some."""
        n = await self._memories.delete_for_user(target.tenant_id, target.subject)
        if self._redis is not None:
            await self._redis.delete(keys.user_memories(target.tenant_id, target.subject))
        return {"memories": n}
