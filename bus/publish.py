"""Publishing commands, reading a run's events, requesting a cancel."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from bus import keys, wire
from bus.commands import Command
from bus.events import ClientEvent, parse_event

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from bus.settings import BusSettings


async def publish(redis: Redis, command: Command, settings: BusSettings) -> str:
    """XADD a command to its role's stream on its shard; returns the entry id."""
    entry = await redis.xadd(
        keys.role_stream(command.role, command.shard),
        {wire.DATA_FIELD: wire.encode(command)},
        maxlen=settings.stream_maxlen,
        approximate=True,
    )
    return entry.decode()


async def request_cancel(redis: Redis, run_id: str, settings: BusSettings) -> None:
    """Mark a run cancelled; workers honour it between steps and while streaming."""
    shard = keys.shard_of(run_id, settings.shards)
    await redis.set(keys.run_cancel(run_id, shard), b"1", ex=settings.run_ttl_s)


async def read_events(
    redis: Redis, run_id: str, shard: int, *, after: str = "0-0", block_ms: int = 1000
) -> AsyncIterator[tuple[str, ClientEvent]]:
    """Follow a run's events from ``after`` until its ``done`` event, as (id, event)."""
    stream = keys.run_events(run_id, shard)
    last = after
    while True:
        resp = await redis.xread({stream: last}, count=500, block=block_ms)
        for _, entries in resp or ():
            for entry_id, fields in entries:
                last = entry_id.decode()
                event = parse_event(wire.raw_data(fields))
                yield last, event
                if event.type == "done":
                    return
