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

A change also renews each shard's settings epoch (`bus.epochs`), after the number moved.
A step delivered at an epoch this process has read the tenant's number at since takes
that number: the common step reads nothing (`current`).
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import TYPE_CHECKING

from bus import epochs, keys
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
    # After the number moved: a step delivered at the new epoch reads it again.
    await epochs.renew(redis, (keys.settings_epoch(s) for s in range(shards)))


async def raise_copy(redis: Redis, tenant_id: str, shard: int, version: int) -> None:
    """Raise the shard's copy of the tenant's version to ``version`` (read from the
    number itself): a copy left behind (one made before copies existed) stops sending
    every publish of the shard back to a re-read."""
    key = keys.tenant_settings_version_on(tenant_id, shard)
    await run_script(redis, _RAISE, _RAISE_SHA, [key], [version])


async def current(redis: Redis, tenant_id: str) -> int:
    """The tenant's settings version (0: never changed since Redis started).

    Wanted by every step that uses a tenant's cached settings. A step delivered at a
    settings epoch (`bus.epochs.SETTINGS`) this process has read the number at since takes
    that number; otherwise it is read, on the process's pipelined connection
    (`bus.redis_io.mux`).
    """
    epoch = epochs.SETTINGS.get()
    if epoch is not None:
        seen = _SEEN.get(tenant_id)
        if seen is not None and seen[0] == epoch:
            return seen[1]
    raw: bytes | str | None = await mux_for(redis).execute(
        "GET", keys.tenant_settings_version(tenant_id)
    )
    version = int(raw) if raw is not None else 0
    if epoch is not None:  # read after the epoch was: at least that epoch's number
        if len(_SEEN) >= _SEEN_LIMIT:
            _SEEN.clear()
        _SEEN[tenant_id] = (epoch, version)
    return version


#: Per tenant: the last settings epoch this process read its number at, and the number.
_SEEN: dict[str, tuple[bytes, int]] = {}
_SEEN_LIMIT = 10_000
