"""The web page's login tokens and sessions in Redis (`api.app.ports.SessionStore`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from redis.asyncio import Redis


class RedisSessionStore:
    """`SessionStore` on the shared Redis client (values expire with their TTL)."""

    def __init__(self, redis: Redis) -> None:
        self._redis = redis

    async def put(self, name: str, value: str, ttl_s: int) -> None:
        """SET with EX."""
        await self._redis.set(name, value, ex=ttl_s)

    async def take(self, name: str) -> str | None:
        """GETDEL."""
        value = await self._redis.getdel(name)
        return None if value is None else value.decode()

    async def read(self, name: str) -> tuple[str | None, int]:
        """GET and TTL in one pipeline."""
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.get(name)
            pipe.ttl(name)
            raw, ttl = await pipe.execute()
        return (None if raw is None else raw.decode()), int(ttl)

    async def touch(self, name: str, ttl_s: int) -> None:
        """EXPIRE."""
        await self._redis.expire(name, ttl_s)

    async def drop(self, name: str) -> None:
        """DEL."""
        await self._redis.delete(name)
