"""Connecting a process to Redis: the configured server or cluster, or the embedded one."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from dataclasses import dataclass

from faststream.redis import RedisBroker
from redis.asyncio import Redis

from bus import broker as bus_broker
from bus.cluster import close_cluster, open_cluster
from bus.embedded import EmbeddedRedis
from bus.errors import RedisUnavailable
from bus.redis_io.shared_mux import close_mux
from bus.settings import BusSettings


@dataclass
class Connection:
    """A connected broker (none on a cluster) and the Redis client the runtime uses."""

    broker: RedisBroker | None
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
    if settings.redis_cluster:
        async with _cluster(url) as redis:
            yield Connection(None, redis, url)
        return
    broker = bus_broker.make_broker(url)
    try:
        redis = await bus_broker.connect(broker)
        try:
            yield Connection(broker, redis, url)
        finally:
            await close_mux(redis)
    finally:
        await broker.stop()
        if server:
            server.stop()


@contextlib.asynccontextmanager
async def _cluster(url: str) -> AsyncGenerator[Redis]:
    """A Redis Cluster client (FastStream's broker has none), closed with every node."""
    redis = open_cluster(url)
    try:
        try:
            await redis.initialize()  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]
        except Exception as e:
            raise RedisUnavailable(f"cannot reach the Redis Cluster at {url}: {e}") from e
        yield redis
    finally:
        await close_mux(redis)
        await close_cluster(redis)
