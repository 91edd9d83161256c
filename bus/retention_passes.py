"""Retention passes: each tenant's policy applied to its data, one kind at a time.

A tenant's policy is its ``retention`` preference over the deployment's default
(``AGENTBUS_RETENTION``); a kind neither sets is kept forever. A pass deletes in batches
of ``AGENTBUS_RETENTION_BATCH`` rows, each its own short transaction
(`bus.store.retention`), and then forgets the pruned runs' Redis keys (`bus.forget`).
Blobs (bulky tool results and other parts of a run's state, stored in Redis) are deleted
for runs that ended before the ``blobs`` cutoff; they expire anyway with the run's keys
(``AGENTBUS_RUN_TTL_S``).

`RetentionLoop` runs passes in `agentbus up` and in every worker process, one at a time
across the deployment: the holder of a lease in Redis runs them, and a crashed holder's
lease expires, so another process takes over.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import structlog
from pydantic import BaseModel, ConfigDict, ValidationError
from redis.exceptions import RedisError

from bus import keys
from bus.errors import StoreError
from bus.forget import forget_runs, scan_keys
from bus.retention import KINDS, Kind, RetentionPolicy
from bus.runtime.leases import TAKE_OR_RENEW
from bus.typed_redis import lua

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from bus.store import RetentionStore

log = structlog.get_logger("api.retention")


class RetentionReport(BaseModel):
    """What one pass deleted (or, dry, would delete): per tenant, per kind.

    ``conversations`` is counted beside ``messages`` (a conversation goes whole), and
    ``redis_keys`` beside ``runs`` (the pruned runs' keys).
    """

    model_config = ConfigDict(frozen=True)

    dry_run: bool
    tenants: dict[str, dict[str, int]]

    def total(self, kind: str) -> int:
        """How many of ``kind`` over every tenant."""
        return sum(counts.get(kind, 0) for counts in self.tenants.values())


class Retention:
    """Runs retention passes over the store and Redis.

    Args:
        store: the retention deletes.
        redis: the broker (the pruned runs' keys, the blobs).
        defaults: the deployment's policy (``AGENTBUS_RETENTION``).
        batch: rows per batch (``AGENTBUS_RETENTION_BATCH``).
        shards: the deployment's shard count.
        max_batches: batches per kind and tenant in one pass; the rest waits for the next.
        clock: now, timezone-aware (tests pass a fixed one).
    """

    def __init__(
        self,
        store: RetentionStore,
        redis: Redis,
        *,
        defaults: RetentionPolicy,
        batch: int,
        shards: int,
        max_batches: int = 200,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._store = store
        self._redis = redis
        self._defaults = defaults
        self._batch = batch
        self._shards = shards
        self._max_batches = max_batches
        self._clock = clock

    async def policies(self, tenant: str | None = None) -> dict[str, RetentionPolicy]:
        """Each tenant's policy (or one tenant's): its preference over the default."""
        stored = await self._store.policies()
        tenants = [tenant] if tenant is not None else await self._store.tenants()
        found: dict[str, RetentionPolicy] = {}
        for t in tenants:
            try:
                own = RetentionPolicy.model_validate(stored.get(t) or {})
            except ValidationError as e:
                # Stored before a bound changed: the default, rather than no pass at all.
                log.warning("retention preference unreadable", tenant_id=t, error=str(e))
                own = RetentionPolicy()
            found[t] = own.over(self._defaults)
        return found

    async def run(self, tenant: str | None = None, *, dry_run: bool = False) -> RetentionReport:
        """One pass over every tenant (or one): what it deleted, per tenant and kind."""
        now = self._clock()
        policies = await self.policies(tenant)
        report: dict[str, dict[str, int]] = {}
        for t, policy in policies.items():
            report[t] = await self._tenant(t, policy, now, dry_run)
        blobs = await self._blobs(policies, now, dry_run)
        for t, counts in report.items():
            counts["blobs"] = blobs.get(t, 0)
        return RetentionReport(dry_run=dry_run, tenants=report)

    async def _tenant(
        self, tenant: str, policy: RetentionPolicy, now: datetime, dry_run: bool
    ) -> dict[str, int]:
        counts: dict[str, int] = dict.fromkeys(KINDS, 0)
        for kind in KINDS:
            before = policy.cutoff(kind, now)
            if before is None or kind == "blobs":
                continue
            if dry_run:
                counts[kind] = await self._store.count(tenant, kind, before)
                if kind == "messages":
                    counts["conversations"] = await self._store.count(
                        tenant, "conversations", before
                    )
                continue
            counts |= await self._prune(tenant, kind, before)
        return counts

    async def _prune(self, tenant: str, kind: Kind, before: datetime) -> dict[str, int]:
        """Batches of one kind until none is left (or ``max_batches``); the counts."""
        counts: dict[str, int] = {}
        pruned_runs: list[str] = []
        for _ in range(self._max_batches):
            done = await self._batch_of(tenant, kind, before, counts, pruned_runs)
            if done < self._batch:
                break
        if pruned_runs:
            counts["redis_keys"] = await forget_runs(
                self._redis, tenant, pruned_runs, shards=self._shards
            )
        return counts

    async def _batch_of(
        self,
        tenant: str,
        kind: Kind,
        before: datetime,
        counts: dict[str, int],
        pruned_runs: list[str],
    ) -> int:
        """One batch of ``kind``, added to ``counts``; how many of the batch's rows it took."""
        if kind == "runs":
            ids = await self._store.prune_runs(tenant, before, self._batch)
            pruned_runs += ids
            done = len(ids)
        elif kind == "messages":
            done, messages = await self._store.prune_conversations(tenant, before, self._batch)
            counts["conversations"] = counts.get("conversations", 0) + done
            counts["messages"] = counts.get("messages", 0) + messages
            return done
        elif kind == "checkpoints":
            done = await self._store.prune_checkpoints(tenant, before, self._batch)
        else:
            done = await self._store.prune_audit(tenant, before, self._batch)
        counts[kind] = counts.get(kind, 0) + done
        return done

    async def _blobs(
        self, policies: dict[str, RetentionPolicy], now: datetime, dry_run: bool
    ) -> dict[str, int]:
        """Delete the blobs of ended runs past their tenant's ``blobs`` cutoff; per tenant."""
        cutoffs = {t: c for t, p in policies.items() if (c := p.cutoff("blobs", now)) is not None}
        if not cutoffs:
            return {}
        by_run: dict[str, list[str]] = {}
        async for key in scan_keys(self._redis, f"{keys.PREFIX}:*:run:*:blob:*"):
            by_run.setdefault(key.partition(":run:")[2].split(":", 1)[0], []).append(key)
        deleted: dict[str, int] = {}
        run_ids = sorted(by_run)
        for start in range(0, len(run_ids), self._batch):
            ended = await self._store.ended_runs(run_ids[start : start + self._batch])
            for run_id, (tenant, at) in ended.items():
                cutoff = cutoffs.get(tenant)
                if cutoff is None or at >= cutoff:
                    continue
                blob_keys = by_run[run_id]
                n = len(blob_keys) if dry_run else int(await self._redis.unlink(*blob_keys))
                deleted[tenant] = deleted.get(tenant, 0) + n
        return deleted


class RetentionLoop:
    """Runs a pass every ``interval_s`` while this process holds the deployment's lease.

    Args:
        retention: the passes.
        redis: where the lease is.
        interval_s: seconds between passes (``AGENTBUS_RETENTION_INTERVAL_S``).
        lease_ms: the lease's life without a renewal (default: two intervals, at least two
            minutes: longer than a pass takes); a dead holder's lease is free after it.
    """

    def __init__(
        self, retention: Retention, redis: Redis, interval_s: float, lease_ms: int | None = None
    ) -> None:
        self._retention = retention
        self._redis = redis
        self._interval_s = interval_s
        self._token = uuid.uuid4().hex
        self._lease_ms = lease_ms or int(max(interval_s, 60.0) * 2000)

    async def hold(self) -> bool:
        """Take the lease, or renew it if it is ours; False while another process holds it."""
        take = lua(self._redis, TAKE_OR_RENEW)
        held = await take(keys=[keys.retention_lease()], args=[self._token, self._lease_ms])
        return bool(held)

    async def run_forever(self) -> None:
        """Pass, sleep, repeat, until cancelled; a failed pass is logged and retried later."""
        while True:
            try:
                if await self.hold():
                    report = await self._retention.run()
                    deleted = {k: report.total(k) for k in (*KINDS, "conversations")}
                    if any(deleted.values()):
                        log.info("retention pass", **deleted)
            except (StoreError, RedisError, OSError) as e:
                log.warning("retention pass failed", error=str(e))
            except Exception:  # a failed pass must never stop the workers it runs beside
                log.exception("retention pass failed")
            await asyncio.sleep(self._interval_s)
