"""A version number per tenant's settings, in Redis: every change increments it.

Processes cache a tenant's policy (its enabled tools, egress hosts, MCP servers) so a batch
of steps does not read SQL each. They read this number each time they use the cache and
re-read the store when it moved, so a change takes effect, in every process, for each step
that starts after the request that made it returned.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bus import keys
from bus.runtime.shared_mux import mux_for

if TYPE_CHECKING:
    from redis.asyncio import Redis


async def bump(redis: Redis, tenant_id: str) -> None:
    """Record that the tenant's settings changed (after the change is committed)."""
    await redis.incr(keys.tenant_settings_version(tenant_id))


async def current(redis: Redis, tenant_id: str) -> int:
    """The tenant's settings version (0: never changed since Redis started).

    Read on every step that uses a tenant's cached settings, so it goes out on the
    process's pipelined connection (`bus.runtime.mux`): redis-py's client costs several
    times the CPU per command.
    """
    raw: bytes | str | None = await mux_for(redis).execute(
        "GET", keys.tenant_settings_version(tenant_id)
    )
    return int(raw) if raw is not None else 0
