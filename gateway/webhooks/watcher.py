"""The watcher: follows the event streams of runs that named a webhook and schedules messages.

A run's A2A push configs (`gateway.webhooks.push_configs`) are read with its registration,
and each event that makes a notification is scheduled once per config, the cursor moving
with the last of them.

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
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import structlog
from pydantic import ValidationError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from bus import keys, wire
from bus.events import Done, parse_event
from bus.readers import Contract
from bus.typed_redis import commands, queued
from gateway.webhooks import a2a_payloads, payloads
from gateway.webhooks.push_configs import PushConfig, configs_of, headers_json
from gateway.webhooks.schedule import Schedule, WebhookSpec

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = structlog.get_logger("gateway.webhooks.watcher")
T = TypeVar("T")

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
                    wake_cursor, offset = await self._step(shard, wake_cursor, offset, stopping)
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

    async def _step(
        self, shard: int, wake_from: str | None, offset: int, stopping: asyncio.Event
    ) -> tuple[str, int]:
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
        by_stream: dict[str, tuple[str, _Followed]] = {}
        for run_id, followed in specs.items():
            stream = keys.run_events(run_id, shard)
            streams[stream] = followed.cursor
            by_stream[stream] = (run_id, followed)
        # In turns over many runs, a long block on one window would starve the others.
        block = 10 if rotating else self._block_ms
        read = self._redis.xread(streams, count=WINDOW, block=block)  # type: ignore[arg-type]
        resp = await _unless_stopped(read, stopping)
        for name_b, entries in resp or ():
            name = name_b.decode()
            if name == wake:
                wake_cursor = str(entries[-1][0].decode())
            elif name in by_stream:
                run_id, followed = by_stream[name]
                await self._process(shard, run_id, followed, entries)
        return wake_cursor, offset

    async def _specs(self, shard: int, runs: list[str]) -> dict[str, _Followed]:
        if not runs:
            return {}
        async with self._redis.pipeline(transaction=False) as pipe:
            for run_id in runs:
                queued(pipe).hmget(keys.run_webhook(run_id, shard), ["spec", "cursor"])
                queued(pipe).hgetall(keys.run_push_configs(run_id, shard))
            rows = await pipe.execute()
        found: dict[str, _Followed] = {}
        for i, run_id in enumerate(runs):
            (spec, cursor), pushes = rows[2 * i], rows[2 * i + 1]
            try:
                if spec is None:
                    raise ValueError("registration expired")
                found[run_id] = _Followed(
                    WEBHOOK_SPEC.read_json(spec),
                    (cursor or b"0-0").decode(),
                    configs_of(pushes or {}),
                )
            except (ValueError, ValidationError) as e:
                log.warning("webhook registration dropped", run_id=run_id, error=str(e))
                await self._redis.zrem(keys.webhook_watch(shard), run_id)
        return found

    async def _process(
        self,
        shard: int,
        run_id: str,
        followed: _Followed,
        entries: list[tuple[bytes, dict[bytes, bytes]]],
    ) -> None:
        moved = False
        cursor = followed.cursor
        for entry_b, fields in entries:
            entry = entry_b.decode()
            try:
                out = _outgoing(run_id, entry, followed, fields.get(_DATA, b""))
            except ValidationError as e:  # not an event we know: skip it, not the run
                log.warning("webhook watcher: unreadable event", run_id=run_id, error=str(e))
                out = None
            if not out:
                moved = True
                cursor = entry
                continue
            messages, finished = out
            if not messages:
                await self._schedule.advance(shard, run_id, entry, finished=True)
                return
            for i, message in enumerate(messages):
                last = i == len(messages) - 1  # the cursor moves past the event with the last
                await self._schedule.enqueue(
                    shard,
                    followed.spec,
                    run_id,
                    delivery_id=message.id,
                    type=message.type,
                    body=message.body,
                    now=time.time(),
                    cursor=entry if last else cursor,
                    finished=finished and last,
                    url=message.url,
                    headers=message.headers,
                )
            cursor = entry
            moved = False
            if finished:
                return
        if moved:
            await self._schedule.advance(shard, run_id, entries[-1][0].decode(), finished=False)


@dataclass(frozen=True, slots=True)
class _Followed:
    """A followed run: its registration, cursor and A2A push configs."""

    spec: WebhookSpec
    cursor: str
    pushes: list[PushConfig]


@dataclass(frozen=True, slots=True)
class _Message:
    """One delivery to schedule (``url`` None: the spec's own)."""

    id: str
    type: str
    body: bytes
    url: str | None = None
    headers: str = ""


def _outgoing(
    run_id: str, entry: str, followed: _Followed, data: bytes
) -> tuple[list[_Message], bool] | None:
    """The deliveries one event makes (the REST webhook's, then one per push config), and
    whether the run finished; None when it makes none and the run goes on."""
    out: list[_Message] = []
    finished = False
    spec = followed.spec
    rest = payloads.message_for(spec, data) if spec.url else None
    if rest is not None:
        type_, body, finished = rest
        out.append(_Message(payloads.delivery_id(run_id, entry), type_, body))
    push = a2a_payloads.notification(spec, run_id, data) if followed.pushes else None
    if push is not None:
        body, finished = push
        for config in followed.pushes:
            delivery = f"{payloads.delivery_id(run_id, entry)}_{config.id}"
            out.append(
                _Message(delivery, a2a_payloads.TASK_UPDATE, body, config.url, headers_json(config))
            )
    if not out and b'"done"' in data and isinstance(parse_event(data), Done):
        return [], True  # nothing to send (every config deleted): the run is no more followed
    return (out, finished) if out else None


async def _unless_stopped(read: Awaitable[T], stopping: asyncio.Event) -> T | None:
    """``read``'s result, or None when ``stopping`` is set first (the read is cancelled).

    A read has no effect to lose (a run's cursor moves only when what was read is
    processed), so a stopping process need not wait out the block time.
    """
    reading = asyncio.ensure_future(read)
    waiting = asyncio.ensure_future(stopping.wait())
    try:
        await asyncio.wait((reading, waiting), return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiting.cancel()
        if not reading.done():
            reading.cancel()
            await asyncio.wait((reading,))
    return None if reading.cancelled() else reading.result()


async def _sleep(stopping: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stopping.wait(), seconds)
