"""A version number per tenant's settings, in Redis: every change increments it.

Processes cache a tenant's policy (its enabled tools, egress hosts, MCP servers) so a batch
of steps does not read SQL each. They read this number each time they use the cache and
re-read the store when it moved, so a change takes effect, in every process, for each step
that starts after the request that made it returned.

The number is also copied to each shard (`keys.tenant_settings_version_on`), so a script
of that shard can check it in the round trip it makes anyway: the API publishes a run
only if the tenant's version is still the one its cached API key was read at
(`bus.publish_once.PUBLISH_IF_CURRENT`). A copy only ever rises, to a value the number
had: a change's copies are raised before the change's request returns, so a copy equal to
what a cache was read at means no change returned since (a copy behind the number only
costs a re-read: see `raise_copy`).
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import TYPE_CHECKING

from bus import keys
from bus.redis_io.lua import run_script
from bus.redis_io.shared_mux import mux_for

if TYPE_CHECKING:
    from redis.asyncio import Redis

# KEYS: a shard's copy. ARGV: a value the number had. Raise the copy to it, never lower.
_RAISE = """
local v = tonumber(ARGV[1])
if v > tonumber(redis.call('GET', KEYS[1]) or '0') then redis.call('SET', KEYS[1], ARGV[1]) end
return 1
"""
_RAISE_SHA = hashlib.sha1(_RAISE.encode()).hexdigest()


async def bump(redis: Redis, tenant_id: str, *, shards: int) -> None:
    """Record that the tenant's settings changed (after the change is committed), on
    every one of the ``shards`` too."""
    version = int(await redis.incr(keys.tenant_settings_version(tenant_id)))
    await asyncio.gather(*(raise_copy(redis, tenant_id, s, version) for s in range(shards)))


async def raise_copy(redis: Redis, tenant_id: str, shard: int, version: int) -> None:
    """Raise the shard's copy of the tenant's version to ``version`` (read from the
    number itself): a copy left behind (one made before copies existed) stops sending
    every publish of the shard back to a re-read."""
    key = keys.tenant_settings_version_on(tenant_id, shard)
    await run_script(redis, _RAISE, _RAISE_SHA, [key], [version])


async def current(redis: Redis, tenant_id: str) -> int:
    """The tenant's settings version (0: never changed since Redis started).

    Read on every step that uses a tenant's cached settings, so it goes out on the
    process's pipelined connection (`bus.redis_io.mux`): redis-py's client costs several
    times the CPU per command.
    """
    raw: bytes | str | None = await mux_for(redis).execute(
        "GET", keys.tenant_settings_version(tenant_id)
    )
    return int(raw) if raw is not None else 0
