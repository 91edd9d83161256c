"""The recorder: applies ledger records (`bus.ledger`) to the SQL store, many per transaction.

It reads its shard streams with one XREADGROUP of up to ``batch`` entries, hands every
record of a kind to that kind's applier in one call (one transaction), and acks the batch
after it committed. Appliers skip records whose key they already wrote, so a batch that is
delivered again (the recorder died between commit and ack, or the database failed) changes
nothing twice. When a batch fails, its records are tried one at a time; one that keeps
failing stays pending and, after ``max_deliveries``, goes to the dead-letter stream
(``agentbus dlq replay`` puts it back). Entries of a recorder that died are taken over with
XAUTOCLAIM, as the step workers do.

It has the interface `bus.runtime.runner.Runner` drives (``run``, ``stop``, ``busy``,
``streams``, ``group``), so it runs beside the step workers in any process.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import structlog
from pydantic import ValidationError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from bus import keys, wire
from bus.ledger import LedgerRecord
from bus.runtime import metrics
from bus.runtime.deadletter import DeadLetter, dead_letter
from bus.runtime.groups import claim_idle, ensure_group
from bus.runtime.worker import consumer_name

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from bus.settings import BusSettings

#: Writes every record of one kind, in one transaction; must skip keys already written.
Applier = Callable[[Sequence[LedgerRecord]], Awaitable[None]]

log = structlog.get_logger("bus.recorder")
_ROLE = keys.Role.RECORDER


class Recorder:
    """Consumes the recorder streams of every shard.

    Args:
        redis: the broker connection.
        settings: shards, block time, claim idle time, delivery cap.
        appliers: one per record kind; a record of another kind is dead-lettered.
        batch: the most entries one transaction carries.
        linger_s: after a read that found fewer than ``batch`` entries, how long to wait
            for more before writing (Kafka's ``linger.ms``): at low load one transaction
            then carries the records of several steps, and its write leaves the moments
            the steps themselves run. Records are durable in Redis meanwhile.
    """

    def __init__(
        self,
        redis: Redis,
        settings: BusSettings,
        appliers: Mapping[str, Applier],
        *,
        batch: int = 256,
        linger_s: float = 0.02,
        consumer: str | None = None,
    ) -> None:
        self.redis = redis
        self.settings = settings
        self.appliers = dict(appliers)
        self.batch = batch
        self.linger_s = linger_s
        self.consumer = consumer or consumer_name()
        self.role = _ROLE
        self.group = keys.group_name(_ROLE)
        self.streams = [keys.role_stream(_ROLE, k) for k in range(settings.shards)]
        self._stopping = asyncio.Event()
        self._working = False
        self._reclaim_cursor = dict.fromkeys(self.streams, "0-0")
        self.read_empty = False

    @property
    def busy(self) -> bool:
        """True while a batch is being written or the last read delivered something."""
        return self._working or not self.read_empty

    async def ensure_groups(self) -> None:
        """Create the recorder group on every shard stream (idempotent)."""
        for stream in self.streams:
            await ensure_group(self.redis, stream, self.group, from_start=True)

    def stop(self) -> None:
        """Stop reading; the batch in hand is finished first."""
        self._stopping.set()

    async def run(self) -> None:
        """Record until ``stop()``."""
        await self.ensure_groups()
        reclaim = asyncio.create_task(self._reclaim_loop(), name="recorder-reclaim")
        try:
            await self._read_loop()
        finally:
            reclaim.cancel()
            await asyncio.gather(reclaim, return_exceptions=True)

    async def _read_loop(self) -> None:
        streams = dict.fromkeys(self.streams, ">")
        while not self._stopping.is_set():
            try:
                resp = await self.redis.xreadgroup(
                    self.group,
                    self.consumer,
                    streams,  # type: ignore[arg-type]
                    count=self.batch,
                    block=min(self.settings.read_block_ms, 200),
                )
            except ResponseError as e:
                if "NOGROUP" not in str(e) and "UNBLOCKED" not in str(e):
                    raise
                await self.ensure_groups()
                continue
            except (RedisConnectionError, RedisTimeoutError) as e:
                log.warning("broker unreachable, retrying", error=str(e))
                await asyncio.sleep(1.0)
                continue
            self.read_empty = not resp
            entries = [(sb.decode(), eid, f) for sb, items in resp or () for eid, f in items]
            if entries and len(entries) < self.batch and self.linger_s > 0:
                await asyncio.sleep(self.linger_s)
                try:
                    more = await self.redis.xreadgroup(
                        self.group,
                        self.consumer,
                        streams,  # type: ignore[arg-type]
                        count=self.batch - len(entries),
                    )
                except (RedisConnectionError, RedisTimeoutError):
                    more = None  # write what we have; the next read retries
                entries += [(sb.decode(), eid, f) for sb, items in more or () for eid, f in items]
            if entries:
                await self._record(entries, deliveries={})

    async def _record(
        self,
        entries: list[tuple[str, bytes, dict[bytes, bytes]]],
        deliveries: Mapping[bytes, int],
    ) -> None:
        self._working = True
        started = time.perf_counter()
        try:
            parsed: list[tuple[str, bytes, LedgerRecord]] = []
            for stream, entry_id, fields in entries:
                try:
                    record = LedgerRecord.model_validate_json(wire.raw_data(fields))
                except (ValidationError, ValueError) as e:
                    await self._dead(stream, entry_id, fields, "unparseable", str(e), 1)
                    continue
                if record.kind not in self.appliers:
                    error = f"no applier for records of kind {record.kind!r}"
                    await self._dead(stream, entry_id, fields, "failed", error, 1)
                    continue
                parsed.append((stream, entry_id, record))
            try:
                await self._apply(parsed)
                done = parsed
            except Exception as e:
                log.warning("batch failed; recording one at a time", error=repr(e))
                done = await self._one_at_a_time(parsed, entries, deliveries)
            await self._ack(done)
            metrics.MESSAGES.labels(str(_ROLE), "ok").inc(len(done))
        finally:
            self._working = False
            metrics.STEP_SECONDS.labels(str(_ROLE)).observe(time.perf_counter() - started)

    async def _one_at_a_time(
        self,
        parsed: list[tuple[str, bytes, LedgerRecord]],
        entries: list[tuple[str, bytes, dict[bytes, bytes]]],
        deliveries: Mapping[bytes, int],
    ) -> list[tuple[str, bytes, LedgerRecord]]:
        """Apply each record alone; a failing one stays pending, or is dead after the cap."""
        fields_of = {eid: f for _, eid, f in entries}
        done: list[tuple[str, bytes, LedgerRecord]] = []
        for item in parsed:
            stream, entry_id, _ = item
            try:
                await self._apply([item])
            except Exception as e:
                delivery = deliveries.get(entry_id, 1)
                if delivery >= self.settings.max_deliveries:
                    fields = fields_of[entry_id]
                    await self._dead(stream, entry_id, fields, "failed", repr(e), delivery)
                continue  # still pending: the reclaim loop brings it back
            done.append(item)
        return done

    async def _apply(self, items: list[tuple[str, bytes, LedgerRecord]]) -> None:
        by_kind: dict[str, list[LedgerRecord]] = {}
        for _, _, record in items:
            by_kind.setdefault(record.kind, []).append(record)
        for kind, records in by_kind.items():
            await self.appliers[kind](records)

    async def _ack(self, items: list[tuple[str, bytes, LedgerRecord]]) -> None:
        by_stream: dict[str, list[bytes]] = {}
        for stream, entry_id, _ in items:
            by_stream.setdefault(stream, []).append(entry_id)
        for stream, ids in by_stream.items():
            await self.redis.xack(stream, self.group, *ids)

    async def _dead(
        self,
        stream: str,
        entry_id: bytes,
        fields: dict[bytes, bytes],
        reason: str,
        error: str,
        delivery: int,
    ) -> None:
        letter = DeadLetter(
            stream=stream,
            entry_id=entry_id.decode(),
            group=self.group,
            role=str(_ROLE),
            reason=reason,
            error=error[:2000],
            deliveries=delivery,
            data=fields.get(wire.DATA_FIELD.encode(), b"").decode(errors="replace"),
        )
        shard = self.streams.index(stream) if stream in self.streams else 0
        if await dead_letter(self.redis, letter, shard, self.settings):
            log.error("ledger record dead-lettered", reason=reason, error=error[:200])
            metrics.DEAD_LETTERS.labels(str(_ROLE), reason).inc()

    async def _reclaim_loop(self) -> None:
        interval = max(0.05, min(5.0, self.settings.claim_idle_ms / 2000))
        while True:
            await asyncio.sleep(interval)
            for stream in self.streams:
                if self._stopping.is_set():
                    return
                try:
                    await self._reclaim(stream)
                except Exception as e:  # the loop must outlive any one failure
                    log.warning("reclaim failed", stream=stream, error=repr(e))

    async def _reclaim(self, stream: str) -> None:
        claimed = await claim_idle(
            self.redis,
            stream,
            self.group,
            self.consumer,
            self.settings.claim_idle_ms,
            self._reclaim_cursor[stream],
            self.batch,
        )
        self._reclaim_cursor[stream] = claimed.cursor
        if claimed.lost:
            log.error("ledger records were trimmed away unwritten", count=claimed.lost)
        if not claimed.entries:
            return
        metrics.RECLAIMED.labels(str(_ROLE)).inc(len(claimed.entries))
        await self._record([(stream, eid, f) for eid, f in claimed.entries], claimed.deliveries)
