"""The dead-letter streams: moving a failed entry there, listing and replaying it."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from bus import keys, wire
from bus.events import Done, ErrorEvent
from bus.runtime.scripts import DEAD_LETTER
from bus.typed_redis import lua

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from bus.settings import BusSettings


class DeadLetter(BaseModel):
    """What the dead-letter stream keeps about a failed entry."""

    model_config = ConfigDict(frozen=True)

    stream: str
    entry_id: str
    group: str
    role: str
    reason: str = Field(description="unparseable | failed | max_deliveries")
    error: str
    deliveries: int
    run_id: str | None = None
    tenant_id: str | None = None
    data: str
    ts: float = Field(default_factory=time.time)


def dead_letter_stream(shard: int) -> str:
    """The dead-letter stream of one shard (tagged, so moving is one transaction)."""
    return f"{keys.DEAD_LETTER_STREAM}:{keys.tag(shard)}"


async def dead_letter(redis: Redis, letter: DeadLetter, shard: int, settings: BusSettings) -> bool:
    """Move an entry to the dead-letter stream and end its run; False if already moved."""
    events: list[str] = []
    events_key = letter.stream
    if letter.run_id:
        events_key = keys.run_events(letter.run_id, shard)
        message = f"step failed after {letter.deliveries} deliveries: {letter.error[:300]}"
        if letter.reason == "unparseable":
            message = f"a message of this run could not be read: {letter.error[:300]}"
        events = [
            wire.encode(ErrorEvent(run_id=letter.run_id, code="dead_letter", message=message)),
            wire.encode(Done(run_id=letter.run_id, status="error")),
        ]
    script = lua(redis, DEAD_LETTER)
    moved = await script(
        keys=[letter.stream, dead_letter_stream(shard), events_key],
        args=[
            letter.group,
            letter.entry_id,
            letter.model_dump_json(),
            len(events),
            settings.events_ttl_s,
            *events,
        ],
    )
    return bool(moved)


async def list_dead_letters(
    redis: Redis, settings: BusSettings, count: int = 100
) -> list[tuple[str, DeadLetter]]:
    """The newest dead letters across shards, as (id, letter), newest first."""
    found: list[tuple[str, DeadLetter]] = []
    for shard in range(settings.shards):
        for entry_id, fields in await redis.xrevrange(dead_letter_stream(shard), count=count):
            letter = DeadLetter.model_validate_json(wire.raw_data(fields))
            found.append((f"{shard}/{entry_id.decode()}", letter))
    found.sort(key=lambda item: item[1].ts, reverse=True)
    return found[:count]


async def replay(redis: Redis, dead_id: str) -> str:
    """Put a dead letter back on its stream and remove it from the dead-letter stream.

    Args:
        redis: the broker connection.
        dead_id: ``SHARD/ENTRY_ID`` as printed by ``agentbus dlq list``.

    Returns:
        The id of the re-published entry.
    """
    shard_s, _, entry_id = dead_id.partition("/")
    if not shard_s.isdigit() or not entry_id:
        raise ValueError(f"dead letter id must look like SHARD/ENTRY_ID, got {dead_id!r}")
    dls = dead_letter_stream(int(shard_s))
    rows = await redis.xrange(dls, min=entry_id, max=entry_id)
    if not rows:
        raise LookupError(f"no dead letter {dead_id}")
    letter = DeadLetter.model_validate_json(wire.raw_data(rows[0][1]))
    async with redis.pipeline(transaction=True) as pipe:
        pipe.xadd(letter.stream, {wire.DATA_FIELD: letter.data})
        pipe.xdel(dls, entry_id)
        new_id, _ = await pipe.execute()
    return new_id.decode()
