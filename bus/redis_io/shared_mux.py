"""The process's one shared mux per Redis client: a `Mux`, or a `ClusterMux` on a cluster."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from bus.cluster import as_cluster
from bus.redis_io.cluster_mux import ClusterMux
from bus.redis_io.mux import Mux

if TYPE_CHECKING:
    from redis.asyncio import Redis


_BY_CLIENT: weakref.WeakKeyDictionary[Any, Mux | ClusterMux] = weakref.WeakKeyDictionary()


def mux_for(redis: Redis) -> Mux | ClusterMux:
    """The shared pipelined connection(s) of ``redis`` (made on first use)."""
    mux = _BY_CLIENT.get(redis)
    if mux is None:
        cluster = as_cluster(redis)
        mux = _BY_CLIENT[redis] = Mux(redis) if cluster is None else ClusterMux(cluster)
    return mux


async def close_mux(redis: Redis) -> None:
    """Close ``redis``'s shared pipelined connection(s), if any were made."""
    mux = _BY_CLIENT.pop(redis, None)
    if mux is not None:
        await mux.aclose()
