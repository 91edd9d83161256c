"""Consumer-group housekeeping: creation at start-up, backlog and lag figures."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from redis.exceptions import ResponseError

from bus import keys

if TYPE_CHECKING:
    from redis.asyncio import Redis


async def ensure_group(redis: Redis, stream: str, group: str, *, from_start: bool = False) -> None:
    """Create a group reading only new entries; the stream is created if missing.

    An existing group keeps its position. With ``from_start`` a new group reads the
    stream from its first entry: the recorder's, so ledger records committed before any
    recorder ever ran are written too.
    """
    try:
        await redis.xgroup_create(stream, group, id="0" if from_start else "$", mkstream=True)
    except ResponseError as e:
        if "BUSYGROUP" not in str(e):
            raise


#: Roles no command of a run is published to: the benchmark's pass-through, and the
#: recorder (its group reads its stream from the start, `Worker.ensure_groups`).
_NOT_PIPELINE = frozenset({keys.Role.NOOP, keys.Role.RECORDER})


async def ensure_role_groups(redis: Redis, shards: int) -> None:
    """Create every pipeline role's group on every shard stream and lane (idempotent).

    A group created at ``$`` never sees what was published before it existed, so a command
    sent to a role none of whose workers had started yet would wait in a stream no group
    reads. Every process that publishes commands (each worker, the edge) calls this at
    start-up, before it publishes anything.
    """
    for role in keys.Role:
        if role in _NOT_PIPELINE:
            continue
        for shard in range(shards):
            for stream in keys.role_streams(role, shard):
                await ensure_group(redis, stream, keys.group_name(role))


@dataclass(frozen=True, slots=True)
class Claimed:
    """Entries taken over from consumers that went idle (see `claim_idle`).

    Attributes:
        cursor: where the next scan of the pending list starts.
        entries: (entry id, fields) of each entry taken over.
        deliveries: how often each was delivered, this time included.
        lost: pending entries trimmed from the stream before anyone acked them.
    """

    cursor: str
    entries: list[tuple[bytes, dict[bytes, bytes]]]
    deliveries: dict[bytes, int]
    lost: int


async def claim_idle(
    redis: Redis, stream: str, group: str, consumer: str, idle_ms: int, cursor: str, count: int
) -> Claimed:
    """XAUTOCLAIM up to ``count`` entries idle for ``idle_ms``, with their delivery counts."""
    reply = await redis.xautoclaim(stream, group, consumer, idle_ms, start_id=cursor, count=count)
    live = [(eid, f) for eid, f in reply[1] if eid is not None and f is not None]
    # Redis 7 lists the ids of trimmed entries and drops them; 6.2 returns nil entries.
    lost = len(reply[1]) - len(live) + (len(reply[2]) if len(reply) > 2 else 0)
    deliveries: dict[bytes, int] = {}
    if live:
        pending = await redis.xpending_range(
            stream,
            group,
            min=live[0][0],
            max=live[-1][0],
            count=len(live) * 4,
            consumername=consumer,
        )
        deliveries = {p["message_id"]: int(p["times_delivered"]) for p in pending}
    return Claimed(_s(reply[0]), live, deliveries, lost)


@dataclass(frozen=True, slots=True)
class GroupStats:
    """Backlog figures of one group on one stream."""

    stream: str
    group: str
    length: int
    pending: int
    lag: int
    consumers: int


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _id_tuple(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


async def group_stats(redis: Redis, stream: str) -> list[GroupStats]:
    """Length, pending and lag of every group on a stream.

    Redis 7 reports ``lag`` itself; on 6.2 it is derived from the last delivered id
    (0 when nothing is undelivered, else at least 1: an exact count needs Redis 7).
    """
    try:
        info = await redis.xinfo_stream(stream)
        groups = await redis.xinfo_groups(stream)
    except ResponseError as e:
        if "no such key" in str(e).lower():
            return []
        raise
    length = int(info["length"])
    last = _s(info["last-generated-id"])
    stats: list[GroupStats] = []
    for g in groups:
        lag = g.get("lag")
        if lag is None:
            delivered = _s(g["last-delivered-id"])
            lag = 0 if _id_tuple(delivered) >= _id_tuple(last) else 1
        stats.append(
            GroupStats(
                stream=stream,
                group=_s(g["name"]),
                length=length,
                pending=int(g["pending"]),
                lag=int(lag),
                consumers=int(g["consumers"]),
            )
        )
    return stats
