"""Leases a step holds while it runs, kept alive by the worker's heartbeat.

A step that must tell the rest of the deployment "I am still working on this" (the
gateway's claim on a side-effecting call, `gateway.once`) sets a key with a short expiry
and registers it here; the worker's heartbeat, the one that keeps the step's stream claim
fresh (``XCLAIM ... JUSTID``), pushes the key's expiry out on the same beat. When the
process dies, the key expires about when the step becomes reclaimable.

A lease's value names its holder: this process's consumer name, a token drawn once per
process start (`PROCESS_TOKEN`) and whatever the step adds (its id and delivery). A
worker that restarts under the same consumer name therefore never takes a lease of its
previous life for its own, and a refresh only extends a key that still holds this
holder's value (compare and expire, one script), never someone else's.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
from typing import TYPE_CHECKING

from bus.redis_io.lua import run_script

if TYPE_CHECKING:
    from redis.asyncio import Redis

#: A singleton job's lease (the runner's stats, the retention passes): take it when free,
#: or renew it when ours (KEYS: the lease; ARGV: the holder, ms). 1 when held.
TAKE_OR_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1]
   or redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
"""

#: Drawn once per process start: two lives of one consumer name hold different leases.
PROCESS_TOKEN = secrets.token_hex(6)

# Extend KEYS[1] by ARGV[2] ms only if it still holds ARGV[1]; 1 if extended, else 0.
REFRESH = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
REFRESH_SHA = hashlib.sha1(REFRESH.encode()).hexdigest()


class Leases:
    """The leases this process's steps hold, by key, with the value each holds.

    Args:
        redis: the broker connection.
        consumer: the worker's consumer name.
        ttl_ms: a lease's life without a refresh (the worker's claim idle time, so a
            dead holder's lease ends about when its step is reclaimed).
    """

    def __init__(self, redis: Redis, consumer: str, ttl_ms: int) -> None:
        self.redis = redis
        self.owner = f"{consumer}/{PROCESS_TOKEN}"
        self.ttl_ms = ttl_ms
        self._held: dict[str, str] = {}

    def holder(self, detail: str) -> str:
        """A holder value for one lease: this process, then ``detail`` (step, delivery)."""
        return f"{self.owner}|{detail}"

    def hold(self, key: str, value: str) -> None:
        """Keep ``key`` (set to ``value`` by the caller) alive until `release`."""
        self._held[key] = value

    def release(self, key: str) -> None:
        """Stop refreshing ``key`` (it then expires, unless the caller deleted it)."""
        self._held.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._held

    async def refresh(self) -> list[str]:
        """Extend every held lease once; the keys no longer ours (expired, or taken over)."""
        held = list(self._held.items())
        if not held:
            return []
        replies = await asyncio.gather(
            *(
                run_script(self.redis, REFRESH, REFRESH_SHA, [key], [value, self.ttl_ms])
                for key, value in held
            ),
            return_exceptions=True,
        )
        lost: list[str] = []
        for (key, _), reply in zip(held, replies, strict=True):
            if isinstance(reply, BaseException):
                raise reply
            if not reply:
                lost.append(key)
        return lost
