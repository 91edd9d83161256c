"""Retention of a process, wired from the settings: the passes and the loop that runs them."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from bus.retention_passes import Retention, RetentionLoop

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from bus.settings import BusSettings
    from bus.store import Stores


def retention_of(bus: BusSettings, stores: Stores, redis: Redis) -> Retention | None:
    """The retention passes (None without the retention store)."""
    if stores.retention is None:
        return None
    return Retention(
        stores.retention,
        redis,
        defaults=bus.retention,
        batch=bus.retention_batch,
        shards=bus.shards,
    )


def start_retention(bus: BusSettings, stores: Stores, redis: Redis) -> asyncio.Task[None] | None:
    """Run retention passes in the background (`up`, the workers); None when turned off
    (``AGENTBUS_RETENTION_INTERVAL_S=0``). Cancel the task to stop it."""
    retention = retention_of(bus, stores, redis)
    if retention is None or bus.retention_interval_s <= 0:
        return None
    loop = RetentionLoop(retention, redis, bus.retention_interval_s)
    return asyncio.create_task(loop.run_forever())
