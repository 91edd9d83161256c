"""The users' memory marks in Redis (`api.app.ports.MemoryMarks`, `bus.keys.user_memories`).

The memory step's writer sets a user's mark to "1" when it stores one of their memories
(`agents.roles.remember.make_memory_applier`); a count that found none sets "0", only where no
mark is (NX), for `NO_MEMORIES_S`; the erasure deletes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bus import keys
from bus.redis_io.shared_mux import mux_for

if TYPE_CHECKING:
    from redis.asyncio import Redis

#: How long "this user has no memories" holds without a count: a memory that reached the
#: store by another way than the memory step's writer (which marks it at once) counts
#: within this.
NO_MEMORIES_S = 600


class RedisMemoryMarks:
    """`MemoryMarks` on the process's pipelined connection (one GET a question)."""

    def __init__(self, redis: Redis) -> None:
        self._redis = redis

    async def has(self, tenant_id: str, subject: str) -> bool | None:
        """The user's mark: True, False, or None when there is none."""
        raw = await mux_for(self._redis).execute("GET", keys.user_memories(tenant_id, subject))
        return None if raw is None else raw in (b"1", "1")

    async def none_found(self, tenant_id: str, subject: str) -> None:
        """Mark "none" unless a mark is there already (a writer's "1" is never lost)."""
        mark = keys.user_memories(tenant_id, subject)
        await mux_for(self._redis).execute("SET", mark, "0", "NX", "EX", NO_MEMORIES_S)
