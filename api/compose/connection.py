"""Connecting a process to Redis: the configured server, or the embedded one."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from dataclasses import dataclass

from faststream.redis import RedisBroker
from redis.asyncio import Redis

from bus import broker as bus_broker
from bus.embedded import EmbeddedRedis
from bus.settings import BusSettings


@dataclass
class Connection:
    """A connected broker and the Redis client the runtime uses."""

    broker: RedisBroker
    redis: Redis
    url: str


@contextlib.asynccontextmanager
async def connect(settings: BusSettings, *, embedded: bool = False) -> AsyncGenerator[Connection]:
    """Connect to Redis; with ``embedded`` and no URL, start the embedded server first."""
    server: EmbeddedRedis | None = None
    if embedded and not settings.redis_url:
        server = EmbeddedRedis(settings.data_dir)
        url = server.start()
    else:
        url = bus_broker.resolve_redis_url(settings)
    broker = bus_broker.make_broker(url)
    try:
        redis = await bus_broker.connect(broker)
        yield Connection(broker, redis, url)
    finally:
        await broker.stop()
        if server:
            server.stop()
