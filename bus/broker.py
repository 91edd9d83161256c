"""The composition root's broker factory: a FastStream RedisBroker and its connection."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from faststream.redis import RedisBroker

from bus import embedded
from bus.connection import connection_class
from bus.errors import RedisUnavailable

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from bus.settings import BusSettings


def resolve_redis_url(settings: BusSettings) -> str:
    """The configured Redis URL, or the running embedded server's socket."""
    if settings.redis_url:
        return settings.redis_url
    if embedded.is_running(settings.data_dir):
        return embedded.socket_url(settings.data_dir)
    raise RedisUnavailable("no Redis: AGENTBUS_REDIS_URL is unset and no embedded server runs")


def make_broker(url: str, **options: Any) -> RedisBroker:
    """A RedisBroker for ``url`` (extra options go to the redis client)."""
    # Pool checkouts that cost no event-loop cycle (bus.connection).
    cls = connection_class(url)
    if cls is not None:
        options.setdefault("connection_class", cls)
    # FastStream logs each message at INFO; the runtime logs what matters itself.
    return RedisBroker(url, logger=None, **options)  # pyright: ignore[reportArgumentType]


async def connect(broker: RedisBroker) -> Redis:
    """Connect the broker and return its Redis client (used by the worker runtime)."""
    try:
        return await broker.connect()
    except OSError as e:
        raise RedisUnavailable(f"cannot reach Redis: {e}") from e
