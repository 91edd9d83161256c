"""The consumer loop every role shares: read, reclaim, dead-letter.

A `StreamConsumer` reads its role's stream on every shard through one consumer group
(``XREADGROUP``, never from ``0``), re-creates the group if the stream vanished (NOGROUP,
or UNBLOCKED while blocked on it), rides out a broker that is briefly unreachable, takes
over entries that consumers which went idle (crashed) left pending (``XAUTOCLAIM``), and
moves an entry that cannot succeed to the dead-letter stream. What is done with the
entries is the subclass's: `bus.runtime.worker.Worker` runs a step per entry,
`bus.runtime.recorder.Recorder` writes ledger records in batches.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
from abc import ABC, abstractmethod
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog
from redis.exceptions import ResponseError

from bus import epochs, keys, wire
from bus.cluster import is_cluster, transient
from bus.runtime import metrics
from bus.runtime.deadletter import DeadLetter, dead_letter
from bus.runtime.groups import claim_idle, ensure_group
from bus.runtime.reads import GroupReads

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from bus.settings import BusSettings

log = structlog.get_logger("bus.consumer")
_DATA = wire.DATA_FIELD.encode()


def consumer_name() -> str:
    """A consumer name unique to this process (host, pid, random suffix)."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"


@dataclass(frozen=True, slots=True)
class Entry:
    """One stream entry delivered to this consumer.

    Attributes:
        stream: the stream it was read from.
        id: its stream id.
        fields: its fields, undecoded (the message is in ``data``).
        delivery: how often it was delivered, this time included (1 on a first read).
        seen: its shard's epochs, read right after it was delivered (`bus.epochs`; None:
            not read with it).
    """

    stream: str
    id: bytes
    fields: dict[bytes, bytes]
    delivery: int = 1
    seen: epochs.Seen | None = None


class StreamConsumer(ABC):
    """Reads one role's shard streams; subclasses say what to do with the entries.

    Args:
        role: whose streams and group these are.
        redis: the broker connection.
        settings: shards, block time, claim idle time, delivery cap.
        consumer: this consumer's name in the group (default: host, pid, random).
        lane: read the role's lane streams instead (`keys.role_stream`), same group.
        watch_epochs: read each shard's epochs behind every read (`Entry.seen`): for roles
            whose steps check a tenant's settings or the erasure fence (`bus.epochs`).
    """

    #: A new group reads its stream from the first entry, not only new ones.
    from_start = False

    def __init__(
        self,
        role: keys.Role,
        redis: Redis,
        settings: BusSettings,
        *,
        consumer: str | None = None,
        lane: str | None = None,
        watch_epochs: bool = False,
    ) -> None:
        self.role = role
        self.watch_epochs = watch_epochs
        self.redis = redis
        self.settings = settings
        self.consumer = consumer or consumer_name()
        self.group = keys.group_name(role)
        self.streams = [keys.role_stream(role, k, lane) for k in range(settings.shards)]
        self.block_ms: int = settings.read_block_ms
        #: After a read that found less than there was room for, how long to wait for more.
        self.linger_s = 0.0
        self.read_empty = False  # the last read returned nothing
        self._stopping = asyncio.Event()
        self._room_freed = asyncio.Event()  # set when `_room` may have grown, and on stop
        self._shard_of_stream = {s: k for k, s in enumerate(self.streams)}
        self._reclaim_cursor = dict.fromkeys(self.streams, "0-0")
        self._empty: dict[str, bool] = {}  # by reader: whether its last read found nothing

    @abstractmethod
    def _room(self) -> int:
        """How many entries this consumer can take now."""

    @abstractmethod
    async def _take(self, entries: list[Entry]) -> None:
        """Handle entries just read or reclaimed (they are pending to us until acked)."""

    async def _drain(self) -> None:  # noqa: B027 (a hook: by default nothing is left in hand)
        """Finish what is in hand after the last read."""

    def _background(self) -> list[Coroutine[Any, Any, None]]:
        """Loops that run beside the read loop until it ends."""
        return [self._reclaim_loop()]

    async def ensure_groups(self) -> None:
        """Create this role's group on every shard stream (idempotent), and each shard's
        epochs when it reads them."""
        for stream in self.streams:
            await ensure_group(self.redis, stream, self.group, from_start=self.from_start)
        if self.watch_epochs:
            await self._ensure_epochs()

    async def _ensure_epochs(self) -> None:
        shards = range(self.settings.shards)
        await epochs.ensure(self.redis, (name for k in shards for name in epochs.watched(k)))

    def stop(self) -> None:
        """Stop reading; what is in hand is finished (``run`` returns after it)."""
        self._stopping.set()
        self._room_freed.set()

    async def run(self) -> None:
        """Consume until ``stop()``, then drain and return."""
        await self.ensure_groups()
        background = [
            asyncio.create_task(loop, name=f"{self.role}-{loop.__name__}")
            for loop in self._background()
        ]
        try:
            await self._read_loop()
            await self._drain()
        finally:
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)

    async def _read_loop(self) -> None:
        if is_cluster(self.redis) and len(self.streams) > 1:
            # One XREADGROUP may only name keys of one slot, and each shard is a slot of
            # its own: one blocking read per shard. Each asks for its share of the room, at
            # least one entry, so a consumer may hold up to one entry per shard beyond it.
            await asyncio.gather(*(self._read_streams([s]) for s in self.streams))
        else:
            await self._read_streams(self.streams)

    async def _read_streams(self, streams: list[str]) -> None:
        """Read ``streams`` in one XREADGROUP at a time until ``stop()``."""
        shard = self._shard_of_stream
        watch = [n for s in streams for n in epochs.watched(shard[s])] if self.watch_epochs else []
        reads = GroupReads(self.redis, self.group, self.consumer, streams, watch)
        try:
            await self._read_loop_of(reads, len(self.streams) // len(streams), streams[0])
        finally:
            await reads.aclose()

    async def _read_loop_of(self, reads: GroupReads, readers: int, name: str) -> None:
        while not self._stopping.is_set():
            room = self._room()
            if room <= 0:
                self._room_freed.clear()
                await self._room_freed.wait()
                continue
            count = -(-room // readers)  # this reader's share, rounded up
            entries = await self._read(reads, count, self.block_ms)
            if entries is None:
                continue
            self._empty[name] = not entries
            self.read_empty = all(self._empty.values())
            if not entries:
                continue
            if len(entries) < count and self.linger_s > 0:
                await asyncio.sleep(self.linger_s)
                entries += await self._read(reads, count - len(entries), None) or ()
            try:
                await self._take(entries)
            except Exception as e:
                if not transient(e):
                    raise
                # The entries stay pending to us; the reclaim loop picks them up later.
                log.warning("broker unreachable while taking entries", error=str(e))
                await asyncio.sleep(1.0)
            # Let the work just started begin before the next blocking read is sent: that
            # read then goes out while it waits on its first round trip, not ahead of it.
            await asyncio.sleep(0)

    async def _read(self, reads: GroupReads, count: int, block: int | None) -> list[Entry] | None:
        """Up to ``count`` new entries (``block`` None: don't wait); None after a failure."""
        try:
            found = await reads.read(count, block)
        except Exception as e:
            # NOGROUP: the stream or group was deleted; UNBLOCKED: deleted while we were
            # blocked on it. Either way, re-create and read again.
            if isinstance(e, ResponseError) and ("NOGROUP" in str(e) or "UNBLOCKED" in str(e)):
                log.warning("group missing, re-creating", role=self.role, error=str(e))
                await self.ensure_groups()
                return None
            if not transient(e):  # else: unreachable, or a cluster failing over
                raise
            log.warning("broker unreachable, retrying", role=self.role, error=str(e))
            await asyncio.sleep(1.0)
            return None
        if not self.watch_epochs:
            return [Entry(stream, eid, fields) for stream, eid, fields in found]
        values = reads.seen
        if None in values.values():  # Redis lost them: new ones (the steps meanwhile read)
            try:
                await self._ensure_epochs()
            except Exception as e:  # the steps read for themselves meanwhile
                log.warning("epochs not made", role=self.role, error=repr(e))
        shard = self._shard_of_stream
        return [
            Entry(stream, eid, fields, 1, epochs.seen(values, shard[stream]))
            for stream, eid, fields in found
        ]

    async def _before_reclaim(self) -> None:  # noqa: B027 (a hook: by default nothing)
        """Run before each reclaim pass."""

    async def _reclaim_loop(self) -> None:
        """Take over entries left pending by consumers that went idle (crashed)."""
        interval = max(0.05, min(5.0, self.settings.claim_idle_ms / 2000))
        while True:
            await asyncio.sleep(interval)
            await self._before_reclaim()
            for stream in self.streams:
                room = self._room()
                if room <= 0 or self._stopping.is_set():
                    break
                try:
                    await self._reclaim(stream, room)
                except Exception as e:  # the loop must outlive any one failure
                    log.warning("reclaim failed", role=self.role, stream=stream, error=repr(e))

    async def _reclaim(self, stream: str, count: int) -> None:
        claimed = await claim_idle(
            self.redis,
            stream,
            self.group,
            self.consumer,
            self.settings.claim_idle_ms,
            self._reclaim_cursor[stream],
            count,
        )
        self._reclaim_cursor[stream] = claimed.cursor
        if claimed.lost:  # pending entries trimmed away before anyone acked them
            log.error("pending entries were trimmed away", stream=stream, count=claimed.lost)
        if not claimed.entries:
            return
        metrics.RECLAIMED.labels(str(self.role)).inc(len(claimed.entries))
        # A reclaimed entry was delivered before: at least twice if XPENDING missed it.
        times = claimed.deliveries
        await self._take([Entry(stream, eid, f, times.get(eid, 2)) for eid, f in claimed.entries])

    async def _dead(
        self,
        entry: Entry,
        reason: str,
        error: str,
        run_id: str | None = None,
        tenant_id: str | None = None,
    ) -> None:
        """Move ``entry`` to the dead-letter stream; with ``run_id``, its run ends ``error``."""
        letter = DeadLetter(
            stream=entry.stream,
            entry_id=entry.id.decode(),
            group=self.group,
            role=str(self.role),
            reason=reason,
            error=error[:2000],
            deliveries=entry.delivery,
            run_id=run_id,
            tenant_id=tenant_id,
            data=entry.fields.get(_DATA, b"").decode(errors="replace"),
        )
        shard = self._shard_of_stream.get(entry.stream, 0)
        if await dead_letter(self.redis, letter, shard, self.settings):
            log.error(
                "dead-lettered",
                role=self.role,
                reason=reason,
                error=error[:200],
                stream=entry.stream,
            )
            metrics.DEAD_LETTERS.labels(str(self.role), reason).inc()
