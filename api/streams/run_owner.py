"""A run's owner key in Redis (`api.app.ports.RunOwner`, `bus.keys.run_owner`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bus import keys

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from api.app.ports import RunOwner


def run_owner_of(redis: Redis) -> RunOwner:
    """`RunOwner` reading the owner key the API wrote when it published the run."""

    async def owner(run_id: str, shard: int) -> str | None:
        raw: bytes | None = await redis.get(keys.run_owner(run_id, shard))
        return None if raw is None else raw.decode()

    return owner
