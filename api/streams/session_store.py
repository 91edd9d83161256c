"""The web page's login tokens and sessions in Redis (`api.app.ports.SessionStore`), under
their digests (`bus.keys.web_login`, `bus.keys.web_session`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bus import keys

if TYPE_CHECKING:
    from redis.asyncio import Redis


class RedisSessionStore:
    """`SessionStore` on the shared Redis client (values expire with their TTL)."""

    def __init__(self, redis: Redis) -> None:
        self._redis = redis

    async def put_login(self, digest: str, key_id: str, ttl_s: int) -> None:
        """SET with EX."""
        await self._redis.set(keys.web_login(digest), key_id, ex=ttl_s)

    async def take_login(self, digest: str) -> str | None:
        """GETDEL."""
        value = await self._redis.getdel(keys.web_login(digest))
        return None if value is None else value.decode()

    async def put_session(self, digest: str, doc: str, ttl_s: int) -> None:
        """SET with EX."""
        await self._redis.set(keys.web_session(digest), doc, ex=ttl_s)

    async def read_session(self, digest: str) -> tuple[str | None, int]:
        """GET and TTL in one pipeline."""
        name = keys.web_session(digest)
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.get(name)
            pipe.ttl(name)
            raw, ttl = await pipe.execute()
        return (None if raw is None else raw.decode()), int(ttl)

    async def touch_session(self, digest: str, ttl_s: int) -> None:
        """EXPIRE."""
        await self._redis.expire(keys.web_session(digest), ttl_s)

    async def drop_session(self, digest: str) -> None:
        """DEL."""
        await self._redis.delete(keys.web_session(digest))
