"""The watcher: follows the event streams of runs that named a webhook and schedules messages.

One process per shard holds the shard's lease and follows its watched runs with one
blocking ``XREAD`` over their event streams (they share the shard's hash tag) plus the
shard's wake stream, which a new registration writes to. Each run's processed position is
its ``cursor`` in Redis; an event that becomes a message is scheduled together with the
cursor move (`Schedule.enqueue`), and the message id derives from the event id, so a
watcher that dies anywhere and is replaced schedules every message exactly once.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING

import structlog
from pydantic import ValidationError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from bus import keys, wire
from bus.readers import Contract
from bus.typed_redis import commands, queued
from gateway.webhooks import payloads
from gateway.webhooks.schedule import Schedule, WebhookSpec

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = structlog.get_logger("gateway.webhooks.watcher")

LEASE_MS = 15_000
#: Streams one XREAD follows; more watched runs are followed in turns.
WINDOW = 256
_DATA = wire.DATA_FIELD.encode()
#: The API writes a run's webhook registration; the gateway of another release may read it.
WEBHOOK_SPEC = Contract("webhook_spec", WebhookSpec, 1)


class Watcher:
    """Turns watched runs' ``done`` (and approval) events into scheduled deliveries.

    Args:
        redis: the broker's client.
        schedule: the delivery schedule.
        owner: this process's name (the lease holder).
        retention_s: how long a run stays watched without ending (its registration's life).
        block_ms: the XREAD BLOCK time.
    """

    def __init__(
        self,
        redis: Redis,
        schedule: Schedule,
        owner: str,
        *,
        retention_s: float,
        block_ms: int = 2_000,
    ) -> None:
        self._redis = redis
        self._schedule = schedule
        self._owner = owner
        self._retention_s = retention_s
        self._block_ms = min(block_ms, LEASE_MS // 3)

    async def run(self, shard: int, stopping: asyncio.Event) -> None:
        """Follow the shard's watched runs while holding its lease, until ``stopping``."""
        wake_cursor: str | None = None
        offset = 0
        try:
            while not stopping.is_set():
                try:
                    if not await self._schedule.hold_lease(shard, self._owner, LEASE_MS):
                        await _sleep(stopping, LEASE_MS / 3000)
                        continue
                    wake_cursor, offset = await self._step(shard, wake_cursor, offset)
                except (RedisConnectionError, RedisTimeoutError, OSError) as e:
                    log.warning("webhook watcher: Redis failed, retrying", error=repr(e))
                    await _sleep(stopping, 1.0)
                except Exception:  # the loop serves every webhook: it must outlive any error
                    log.exception("webhook watcher failed, retrying", shard=shard)
                    await _sleep(stopping, 1.0)
        finally:
            try:
                await self._schedule.release_lease(shard, self._owner)
            except Exception as e:  # the lease expires by itself anyway
                log.warning("webhook watcher: lease not released", error=repr(e))

    async def _step(self, shard: int, wake_from: str | None, offset: int) -> tuple[str, int]:
        wake = keys.webhook_wake(shard)
        wake_cursor = wake_from or "0-0"
        if wake_from is None:  # from the wake stream's end: old entries need no reading
            last = await self._redis.xrevrange(wake, count=1)
            wake_cursor = str(last[0][0].decode()) if last else "0-0"
        watch = keys.webhook_watch(shard)
        await self._redis.zremrangebyscore(watch, "-inf", time.time() - self._retention_s)
        window = await commands(self._redis).zrange(watch, offset, offset + WINDOW - 1)
        runs = [r.decode() for r in window]
        rotating = len(runs) == WINDOW or offset > 0
        offset = offset + WINDOW if len(runs) == WINDOW else 0
        specs = await self._specs(shard, runs)
        streams: dict[str, str] = {wake: wake_cursor}
        by_stream: dict[str, tuple[str, WebhookSpec]] = {}
        for run_id, (spec, cursor) in specs.items():
            stream = keys.run_events(run_id, shard)
            streams[stream] = cursor
            by_stream[stream] = (run_id, spec)
        # In turns over many runs, a long block on one window would starve the others.
        block = 10 if rotating else self._block_ms
        resp = await self._redis.xread(
            streams,  # type: ignore[arg-type]
            count=WINDOW,
            block=block,
        )
        for name_b, entries in resp or ():
            name = name_b.decode()
            if name == wake:
                wake_cursor = str(entries[-1][0].decode())
            elif name in by_stream:
                run_id, spec = by_stream[name]
                await self._process(shard, run_id, spec, entries)
        return wake_cursor, offset

    async def _specs(self, shard: int, runs: list[str]) -> dict[str, tuple[WebhookSpec, str]]:
        if not runs:
            return {}
        async with self._redis.pipeline(transaction=False) as pipe:
            for run_id in runs:
                queued(pipe).hmget(keys.run_webhook(run_id, shard), ["spec", "cursor"])
            rows = await pipe.execute()
        found: dict[str, tuple[WebhookSpec, str]] = {}
        for run_id, (spec, cursor) in zip(runs, rows, strict=True):
            try:
                if spec is None:
                    raise ValueError("registration expired")
                found[run_id] = (WEBHOOK_SPEC.read_json(spec), (cursor or b"0-0").decode())
            except (ValueError, ValidationError) as e:
                log.warning("webhook registration dropped", run_id=run_id, error=str(e))
                await self._redis.zrem(keys.webhook_watch(shard), run_id)
        return found

    async def _process(
        self,
        shard: int,
        run_id: str,
        spec: WebhookSpec,
        entries: list[tuple[bytes, dict[bytes, bytes]]],
    ) -> None:
        moved = False
        for entry_b, fields in entries:
            entry = entry_b.decode()
            try:
                message = payloads.message_for(spec, fields.get(_DATA, b""))
            except ValidationError as e:  # not an event we know: skip it, not the run
                log.warning("webhook watcher: unreadable event", run_id=run_id, error=str(e))
                message = None
            if message is None:
                moved = True
                continue
            type_, body, finished = message
            await self._schedule.enqueue(
                shard,
                spec,
                run_id,
                delivery_id=payloads.delivery_id(run_id, entry),
                type=type_,
                body=body,
                now=time.time(),
                cursor=entry,
                finished=finished,
            )
            moved = False
            if finished:
                return
        if moved:
            await self._schedule.advance(shard, run_id, entries[-1][0].decode(), finished=False)


async def _sleep(stopping: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stopping.wait(), seconds)
