"""The relay: one blocking XREAD per shard, fanned out to many subscribers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable

import pytest
from redis.asyncio import Redis

from api.app.feed import Outbox, RunFeed
from api.streams.relay import Relay
from api.streams.relay_xread import PackedXread
from bus import keys
from tests.conftest import real_client
from tests.support import wait_for


def stream(run: str) -> str:
    return keys.run_events(run, 0)


async def add(redis: Redis, run: str, kind: str = "answer", **fields: object) -> str:
    doc = {"run_id": run, "type": kind, **fields}
    return (await redis.xadd(stream(run), {"data": json.dumps(doc)})).decode()


async def until(check: Callable[[], bool]) -> None:
    async def predicate() -> bool:
        return check()

    await wait_for(predicate, within=3)


class Collect:
    """A sink that records what it got."""

    def __init__(self) -> None:
        self.got: list[tuple[str, bytes]] = []
        self.arrived = asyncio.Event()

    def __call__(self, entry_id: str, data: bytes) -> None:
        self.got.append((entry_id, data))
        self.arrived.set()

    async def until(self, n: int, within: float = 3.0) -> None:
        async with asyncio.timeout(within):
            while len(self.got) < n:
                self.arrived.clear()
                await self.arrived.wait()


@pytest.fixture
async def relay(redis: Redis) -> AsyncIterator[Relay]:
    # A long block: anything arriving quickly proves the wake, not a timeout, re-issued it.
    r = Relay(redis, block_ms=10_000)
    await r.start()
    yield r
    await r.stop()


async def test_entries_after_subscribing_reach_the_sink_in_order(
    redis: Redis, relay: Relay
) -> None:
    sink = Collect()
    relay.subscribe(stream("r1"), 0, "0-0", sink)
    ids = [await add(redis, "r1", delta=str(i)) for i in range(5)]

    await sink.until(5)

    assert [i for i, _ in sink.got] == ids


async def test_a_new_stream_is_picked_up_while_the_reader_blocks(
    redis: Redis, relay: Relay
) -> None:
    first, second = Collect(), Collect()
    relay.subscribe(stream("r1"), 0, "0-0", first)
    await asyncio.sleep(0.1)  # the reader is now blocked on r1 alone

    relay.subscribe(stream("r2"), 0, "0-0", second)
    await add(redis, "r2")

    await second.until(1, within=2.0)  # well under the 10 s block


async def test_subscribing_with_an_old_id_replays_what_follows_it(
    redis: Redis, relay: Relay
) -> None:
    ids = [await add(redis, "r1", delta=str(i)) for i in range(4)]
    sink = Collect()

    relay.subscribe(stream("r1"), 0, ids[1], sink)

    await sink.until(2)
    assert [i for i, _ in sink.got] == ids[2:]


async def test_a_late_subscriber_is_told_where_to_catch_up_to(redis: Redis, relay: Relay) -> None:
    early = Collect()
    relay.subscribe(stream("r1"), 0, "0-0", early)
    ids = [await add(redis, "r1") for _ in range(3)]
    await early.until(3)

    _, catch_up = relay.subscribe(stream("r1"), 0, "0-0", Collect())
    _, nothing = relay.subscribe(stream("r1"), 0, ids[-1], Collect())

    assert (catch_up, nothing) == (ids[-1], None)


async def test_unsubscribing_the_last_sink_drops_the_stream(redis: Redis, relay: Relay) -> None:
    sink = Collect()
    sub, _ = relay.subscribe(stream("r1"), 0, "0-0", sink)
    await add(redis, "r1")
    await sink.until(1)

    relay.unsubscribe(sub)
    relay.unsubscribe(sub)  # idempotent
    await add(redis, "r1")
    await asyncio.sleep(0.2)

    assert len(sink.got) == 1 and relay.streams == 0


async def test_many_streams_share_one_blocking_read(
    redis: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    in_flight = peak = 0
    real_read = PackedXread.read

    async def counting_read(self: PackedXread, streams: dict[str, str]) -> object:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        try:
            return await real_read(self, streams)
        finally:
            in_flight -= 1

    monkeypatch.setattr(PackedXread, "read", counting_read)
    relay = Relay(redis, block_ms=10_000)
    await relay.start()
    try:
        sinks = {f"r{i}": Collect() for i in range(40)}
        for run, sink in sinks.items():
            relay.subscribe(stream(run), 0, "0-0", sink)
        for run in sinks:
            await add(redis, run)
        for sink in sinks.values():
            await sink.until(1)
    finally:
        await relay.stop()
    assert peak == 1


async def test_a_feed_joining_late_gets_every_event_once(redis: Redis, relay: Relay) -> None:
    watcher = Collect()
    relay.subscribe(stream("r1"), 0, "0-0", watcher)
    ids = [await add(redis, "r1", delta=str(i)) for i in range(6)]
    await watcher.until(6)
    outbox = Outbox(100)
    feed = RunFeed(relay, run_id="r1", stream=stream("r1"), shard=0, after=ids[1], outbox=outbox)

    await feed.start()  # catches up (ids[1], cursor] with the relay's range read
    ids.append(await add(redis, "r1", kind="done"))  # then live
    await until(lambda: feed.finished)

    frames = []
    while len(outbox):
        frame = await outbox.get()
        assert frame is not None
        frames.append(frame)
    assert [f.event_id for f in frames] == ids[2:]
    assert json.loads(frames[-1].text)["id"] == ids[-1] and frames[-1].last
    assert relay.streams == 1  # the feed let go of the stream; the watcher still holds it


async def test_a_feed_whose_client_falls_behind_overflows(redis: Redis, relay: Relay) -> None:
    outbox = Outbox(3)
    feed = RunFeed(relay, run_id="r1", stream=stream("r1"), shard=0, after="0-0", outbox=outbox)
    await feed.start()
    for _ in range(5):
        await add(redis, "r1")

    await until(lambda: outbox.overflowed)

    assert feed.done and not feed.finished and relay.streams == 0
    assert await outbox.get() is None


async def test_a_failing_sink_is_dropped_without_stopping_the_others(
    redis: Redis, relay: Relay
) -> None:
    def broken(entry_id: str, data: bytes) -> None:
        raise RuntimeError("bug in a subscriber")

    healthy = Collect()
    relay.subscribe(stream("r1"), 0, "0-0", broken)
    relay.subscribe(stream("r1"), 0, "0-0", healthy)
    await add(redis, "r1")
    await add(redis, "r1")

    await healthy.until(2)


def _read_delays() -> float:
    from prometheus_client import REGISTRY

    return REGISTRY.get_sample_value("agentbus_relay_read_delay_seconds_count") or 0.0


async def test_read_delay_counts_live_entries_not_a_replay(redis: Redis, relay: Relay) -> None:
    old = await add(redis, "r-replay", kind="run_started")
    await asyncio.sleep(0.01)  # the replayed entry is older than the watch
    before = _read_delays()
    sink = Collect()
    relay.subscribe(stream("r-replay"), 0, "0-0", sink)
    await sink.until(1)
    assert sink.got[0][0] == old
    assert _read_delays() == before  # an entry added before the watch is a replay
    await add(redis, "r-replay")
    await sink.until(2)
    assert _read_delays() == before + 1


@pytest.mark.connected
async def test_the_reader_recovers_when_its_connection_is_killed() -> None:
    async with real_client() as redis:
        relay = Relay(redis, block_ms=10_000)
        await relay.start()
        try:
            sink = Collect()
            relay.subscribe(stream("r1"), 0, "0-0", sink)
            first = await add(redis, "r1")
            await sink.until(1)
            await asyncio.sleep(0.1)  # blocked again on its held connection
            # Only this test's database: the server may serve other tests beside.
            db = str(redis.connection_pool.connection_kwargs.get("db", 0))
            readers = [
                c
                for c in await redis.client_list()
                if c.get("cmd") == "xread" and c.get("db") == db
            ]
            assert readers
            for c in readers:
                await redis.client_kill_filter(_id=c["id"])
            second = await add(redis, "r1")

            await sink.until(2, within=5)

            assert [i for i, _ in sink.got] == [first, second]
        finally:
            await relay.stop()
