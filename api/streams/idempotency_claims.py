"""The ``Idempotency-Key`` claims in Redis (`api.app.ports.IdempotencyClaims`), one key per
tenant and digested key (`bus.keys.idempotency`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bus import keys

if TYPE_CHECKING:
    from redis.asyncio import Redis


class RedisIdempotencyClaims:
    """`IdempotencyClaims` on the shared Redis client (a claim expires with its TTL)."""

    def __init__(self, redis: Redis) -> None:
        self._redis = redis

    async def claim(self, tenant_id: str, digest: str, value: str, ttl_s: int) -> bool:
        """SET NX with EX."""
        return bool(
            await self._redis.set(keys.idempotency(tenant_id, digest), value, nx=True, ex=ttl_s)
        )

    async def read(self, tenant_id: str, digest: str) -> str | None:
        """GET."""
        raw = await self._redis.get(keys.idempotency(tenant_id, digest))
        return None if raw is None else raw.decode()

    async def drop(self, tenant_id: str, digest: str) -> None:
        """DEL."""
        await self._redis.delete(keys.idempotency(tenant_id, digest))
