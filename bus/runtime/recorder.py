"""The recorder: applies ledger records (`bus.ledger`) to the SQL store, many per transaction.

It reads its shard streams with one XREADGROUP of up to ``batch`` entries, hands every
record of a kind to that kind's applier in one call (one transaction), and acks the batch
after it committed. Appliers skip records whose key they already wrote, so a batch that is
delivered again (the recorder died between commit and ack, or the database failed) changes
nothing twice. When a batch fails, its records are tried one at a time; one that keeps
failing stays pending and, after ``max_deliveries``, goes to the dead-letter stream
(``agentbus dlq replay`` puts it back). Reading, taking over the entries of a recorder that
died, and dead-lettering are the consumer loop the step workers share
(`bus.runtime.consumer`).

It has the interface `bus.runtime.runner.Runner` drives (``run``, ``stop``, ``busy``,
``streams``, ``group``), so it runs beside the step workers in any process.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

import structlog
from pydantic import ValidationError

from bus import keys, tracing, wire
from bus.commands import TraceContext
from bus.ledger import LedgerRecord
from bus.readers import LEDGER_RECORD
from bus.redis_io.shared_mux import mux_for
from bus.runtime import metrics
from bus.runtime.consumer import Entry, StreamConsumer

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from bus.settings import BusSettings

#: Writes every record of one kind, in one transaction; must skip keys already written.
Applier = Callable[[Sequence[LedgerRecord]], Awaitable[None]]

log = structlog.get_logger("bus.recorder")
_ROLE = keys.Role.RECORDER
_ROLE_NAME = str(_ROLE)
#: Links per batch span (the SDK's default ``OTEL_SPAN_LINK_COUNT_LIMIT``).
MAX_LINKS = 128


def _batch_span(items: Sequence[tuple[Entry, LedgerRecord]]) -> AbstractContextManager[object]:
    """A span for one batch's transaction, linked to the trace of each record's step."""
    links: list[TraceContext] = []
    for traceparent in dict.fromkeys(r.traceparent for _, r in items if r.traceparent):
        try:
            links.append(TraceContext(traceparent=traceparent))
        except ValidationError:
            continue  # not a trace context: no link, the record is written all the same
    attributes = {
        "agentbus.role": str(_ROLE),
        "agentbus.recorder.records": len(items),
        "agentbus.recorder.links": len(links),
    }
    return tracing.span(
        "recorder batch", attributes, links=tuple(links[:MAX_LINKS]), kind="consumer"
    )


class Recorder(StreamConsumer):
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

    # Records committed before any recorder ran are written too.
    from_start = True

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
        super().__init__(_ROLE, redis, settings, consumer=consumer)
        self.appliers = dict(appliers)
        self.batch = batch
        self.linger_s = linger_s
        # Blocking reads of at most 200 ms, so stop() is noticed soon.
        self.block_ms = min(settings.read_block_ms, 200)
        self._working = False

    @property
    def busy(self) -> bool:
        """True while a batch is being written or the last read delivered something."""
        return self._working or not self.read_empty

    def _room(self) -> int:
        return self.batch

    async def _take(self, entries: list[Entry]) -> None:
        self._working = True
        started = time.perf_counter()
        try:
            parsed: list[tuple[Entry, LedgerRecord]] = []
            for entry in entries:
                try:
                    record = LEDGER_RECORD.read_json(wire.raw_data(entry.fields))
                except (ValidationError, ValueError) as e:
                    await self._dead(entry, "unparseable", str(e))
                    continue
                if record.kind not in self.appliers:
                    await self._dead(
                        entry, "failed", f"no applier for records of kind {record.kind!r}"
                    )
                    continue
                parsed.append((entry, record))
            with _batch_span(parsed) if tracing.ENABLED else tracing.OFF:
                try:
                    await self._apply(parsed)
                    done = parsed
                except Exception as e:
                    log.warning("batch failed; recording one at a time", error=repr(e))
                    tracing.add_event("batch_failed", {"error": repr(e)})
                    done = await self._one_at_a_time(parsed)
                await self._ack(done)
            metrics.child(metrics.MESSAGES, _ROLE_NAME, "ok").inc(len(done))
        finally:
            self._working = False
            metrics.child(metrics.STEP_SECONDS, _ROLE_NAME).observe(time.perf_counter() - started)

    async def _one_at_a_time(
        self, parsed: list[tuple[Entry, LedgerRecord]]
    ) -> list[tuple[Entry, LedgerRecord]]:
        """Apply each record alone; a failing one stays pending, or is dead after the cap."""
        done: list[tuple[Entry, LedgerRecord]] = []
        for item in parsed:
            try:
                await self._apply([item])
            except Exception as e:
                entry = item[0]
                if entry.delivery >= self.settings.max_deliveries:
                    await self._dead(entry, "failed", repr(e))
                continue  # still pending: the reclaim loop brings it back
            done.append(item)
        return done

    async def _apply(self, items: list[tuple[Entry, LedgerRecord]]) -> None:
        by_kind: dict[str, list[LedgerRecord]] = {}
        for _, record in items:
            by_kind.setdefault(record.kind, []).append(record)
        for kind, records in by_kind.items():
            await self.appliers[kind](records)

    async def _ack(self, items: list[tuple[Entry, LedgerRecord]]) -> None:
        # On the process's pipelined connection, as the steps' commits go (no pool
        # checkout, no retry wrapper, and under load one socket write with theirs).
        by_stream: dict[str, list[bytes]] = {}
        for entry, _ in items:
            by_stream.setdefault(entry.stream, []).append(entry.id)
        mux = mux_for(self.redis)
        for stream, ids in by_stream.items():
            await mux.execute("XACK", stream, self.group, *ids)
