"""The relay: one blocking XREAD per shard over every run stream this process's clients
watch, fanned out to their subscriptions.

On a single Redis the read is packed by :mod:`api.streams.relay_xread` (each stream's name
encoded once, on a connection the reader holds): it is re-issued after every return.

Clients never hold a Redis connection of their own. Each shard has one reader loop that
issues ``XREAD BLOCK`` over all of that shard's watched run streams (they share the
shard's hash tag, so the same read works on Redis Cluster) plus a private *wake* stream.
When the set of streams grows, an entry XADDed to the wake stream returns the blocking
read at once and it is re-issued with the new set; a shrinking set needs no wake.

Delivery contract of :meth:`Relay.subscribe`: the sink receives, in order, every entry
after the stream's *cursor* at the moment of subscribing. For a stream nobody watched
yet the cursor is the subscriber's own ``after`` id; for a watched one it is the relay's
read position, returned so the subscriber can fetch ``(after, cursor]`` itself. Sinks are
called synchronously and must not block (they append to a bounded buffer).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import structlog
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from api.app import metrics
from api.app.ports import JoinState, Sink, StreamState, Subscription
from api.streams import stream_state
from api.streams.relay_xread import PackedXread, supports
from bus import keys, wire

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = structlog.get_logger("api.streams.relay")

_DATA = wire.DATA_FIELD.encode()
WAKE_TTL_S = 3600


def _id(value: str) -> tuple[int, int]:
    ms, _, seq = value.partition("-")
    return int(ms), int(seq or 0)


@dataclass(eq=False)
class _Watched:
    cursor: str
    subs: list[Subscription] = field(default_factory=list[Subscription])
    # Entries added before the stream was watched are a replay, not relay delay.
    since_ms: int = field(default_factory=lambda: time.time_ns() // 1_000_000)


class Relay:
    """Fans run event streams out to in-process subscribers over one reader per shard.

    Args:
        redis: the shared client; each reader holds one of its pooled connections
            while blocked, so the pool needs ``shards`` + a few connections.
        shards: how many shards runs are spread over (``BusSettings.shards``).
        block_ms: the XREAD BLOCK time; only bounds how often an idle reader loops.
        count: entries read per stream per XREAD.
    """

    def __init__(
        self, redis: Redis, *, shards: int = 1, block_ms: int = 5_000, count: int = 512
    ) -> None:
        self._redis = redis
        self._shards = shards
        self._block_ms = block_ms
        self._count = count
        self.relay_id = secrets.token_hex(6)
        self._watched: list[dict[str, _Watched]] = [{} for _ in range(shards)]
        self._wake_keys = [keys.relay_wake(self.relay_id, k) for k in range(shards)]
        self._wake_sent = [False] * shards
        self._tasks: list[asyncio.Task[None]] = []
        self._background: set[asyncio.Task[None]] = set()
        self._started = asyncio.Event()

    @property
    def streams(self) -> int:
        """How many streams are watched now."""
        return sum(len(w) for w in self._watched)

    async def start(self) -> None:
        """Start one reader per shard (idempotent)."""
        if self._tasks:
            return
        for shard in range(len(self._watched)):
            self._tasks.append(asyncio.create_task(self._read_loop(shard), name=f"relay-{shard}"))

    async def stop(self) -> None:
        """Stop the readers; subscriptions receive nothing more."""
        for task in [*self._tasks, *self._background]:
            task.cancel()
        await asyncio.gather(*self._tasks, *self._background, return_exceptions=True)
        self._tasks.clear()
        with contextlib.suppress(Exception):
            await self._redis.delete(*self._wake_keys)

    def subscribe(
        self, stream: str, shard: int, after: str, sink: Sink
    ) -> tuple[Subscription, str | None]:
        """Watch ``stream`` (a run's events, on ``shard``) for entries after ``after``.

        Returns:
            The subscription, and the cursor up to which the caller must read the stream
            itself (exclusive of ``after``, inclusive of the cursor) because the relay
            has already read past it; None when the relay delivers everything after
            ``after`` by itself. Entries at or before ``after`` may still reach the sink
            when the relay is behind ``after``: subscribers drop what they already have.
        """
        sub = Subscription(stream, shard, sink)
        watched = self._watched[shard].get(stream)
        if watched is None:
            self._watched[shard][stream] = _Watched(after, [sub])
            self._wake(shard)
            catch_up = None
        else:
            watched.subs.append(sub)
            catch_up = watched.cursor if _id(watched.cursor) > _id(after) else None
        metrics.RELAY_SUBSCRIPTIONS.inc()
        metrics.RELAY_STREAMS.set(self.streams)
        return sub, catch_up

    def unsubscribe(self, sub: Subscription) -> None:
        """Stop delivering to ``sub`` (idempotent); the stream is dropped with its last sink."""
        if not sub.active:
            return
        sub.active = False
        metrics.RELAY_SUBSCRIPTIONS.dec()
        streams = self._watched[sub.shard]
        watched = streams.get(sub.stream)
        if watched is None:
            return
        with contextlib.suppress(ValueError):
            watched.subs.remove(sub)
        if not watched.subs:
            # No wake needed: the next read simply leaves the stream out.
            del streams[sub.stream]
        metrics.RELAY_STREAMS.set(self.streams)

    async def read_range(
        self, stream: str, after: str, until: str, count: int
    ) -> list[tuple[str, bytes]]:
        """Up to ``count`` entries of ``stream`` after ``after`` (exclusive) up to ``until``
        (the catch-up read of a subscriber the relay had already read past)."""
        rows = await self._redis.xrange(stream, min="(" + after, max=until, count=count)
        return [(entry_id.decode(), fields.get(_DATA, b"")) for entry_id, fields in rows]

    async def history(self, stream: str) -> list[tuple[str, bytes]]:
        """Every entry of ``stream`` (a paused run's events before it resumes)."""
        rows = await self._redis.xrange(stream)
        return [(entry_id.decode(), wire.raw_data(fields)) for entry_id, fields in rows]

    async def stream_state(self, stream: str) -> StreamState:
        """Existence, first and last ids of ``stream`` (`api.streams.stream_state`)."""
        return await stream_state.stream_state(self._redis, stream)

    def shard_of(self, run_id: str) -> int:
        """The shard a run's streams and keys live on."""
        return keys.shard_of(run_id, self._shards)

    def stream_of(self, run_id: str, shard: int) -> str:
        """The run's event stream (`bus.keys.run_events`)."""
        return keys.run_events(run_id, shard)

    async def join_state(self, run_id: str, shard: int) -> JoinState:
        """The run's owner key and its event stream's state, in one round trip."""
        owner_key, stream = keys.run_owner(run_id, shard), keys.run_events(run_id, shard)
        return await stream_state.join_state(self._redis, owner_key, stream)

    def _wake(self, shard: int) -> None:
        if self._wake_sent[shard] or not self._tasks:
            return
        self._wake_sent[shard] = True
        task = asyncio.create_task(self._send_wake(shard))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _send_wake(self, shard: int) -> None:
        key = self._wake_keys[shard]
        try:
            async with self._redis.pipeline(transaction=False) as pipe:
                pipe.xadd(key, {"w": "1"}, maxlen=16, approximate=True)
                pipe.expire(key, WAKE_TTL_S)
                await pipe.execute()
            metrics.RELAY_WAKES.inc()
        except Exception as e:  # the reader notices a dead Redis itself and retries
            self._wake_sent[shard] = False
            log.warning("relay wake failed", error=repr(e))

    async def _read_loop(self, shard: int) -> None:
        packed = (
            PackedXread(self._redis, count=self._count, block_ms=self._block_ms)
            if supports(self._redis)
            else None
        )
        try:
            await self._read_forever(shard, packed)
        finally:
            if packed is not None:  # the held connection goes back to the pool
                await packed.close()

    async def _read_forever(self, shard: int, packed: PackedXread | None) -> None:
        wake_key = self._wake_keys[shard]
        # The wake stream's current end, so old wake entries do not spin the first read.
        wake_cursor = "0-0"
        with contextlib.suppress(Exception):
            last = await self._redis.xrevrange(wake_key, count=1)
            wake_cursor = last[0][0].decode() if last else "0-0"
        streams = self._watched[shard]
        while True:
            # Snapshot what is read and from where; reset the wake flag before awaiting,
            # so a subscription made during the read sends a fresh wake.
            issued = {name: w.cursor for name, w in streams.items()}
            self._wake_sent[shard] = False
            try:
                if packed is not None:
                    resp = await packed.read({wake_key: wake_cursor, **issued})
                else:
                    resp = await self._redis.xread(
                        {wake_key: wake_cursor, **issued}, count=self._count, block=self._block_ms
                    )
            except (RedisConnectionError, RedisTimeoutError, OSError) as e:
                log.warning("relay read failed, retrying", shard=shard, error=repr(e))
                await asyncio.sleep(0.5)
                continue
            except Exception:  # the reader serves every client: it must outlive any error
                log.exception("relay read failed unexpectedly, retrying", shard=shard)
                await asyncio.sleep(1.0)
                continue
            for stream_b, entries in resp or ():
                name = stream_b.decode()
                if name == wake_key:
                    wake_cursor = entries[-1][0].decode()
                    continue
                watched = streams.get(name)
                # Re-watched from another cursor while the read was in flight: the next
                # read starts from the new cursor, so these entries are not ours to give.
                if watched is None or watched.cursor != issued.get(name):
                    continue
                self._fan_out(watched, entries)

    def _fan_out(self, watched: _Watched, entries: list[tuple[bytes, dict[bytes, bytes]]]) -> None:
        subs = list(watched.subs)
        now_ms = time.time() * 1000
        delivered = 0
        for entry_id, fields in entries:
            eid = entry_id.decode()
            added_ms = _id(eid)[0]
            if added_ms >= watched.since_ms:
                metrics.RELAY_READ_DELAY.observe((now_ms - added_ms) / 1000)
            data = fields.get(_DATA, b"")
            watched.cursor = eid
            for sub in subs:
                if not sub.active:
                    continue
                delivered += 1
                try:
                    sub.sink(eid, data)
                except Exception:  # one broken subscriber must not stop the others
                    log.exception("relay sink failed; dropping it", stream=sub.stream)
                    self.unsubscribe(sub)
        metrics.RELAY_EVENTS.inc(len(entries))
        metrics.RELAY_FANOUT.inc(delivered)
