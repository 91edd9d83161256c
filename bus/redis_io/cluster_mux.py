"""The commit path's connections on a Redis Cluster: one `Mux` per master.

Each command goes to the master of its first key's slot; a MOVED reply or a broken
connection re-reads the slot map (`bus.cluster.refresh_slots`) and sends it again.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from redis.exceptions import SlotNotCoveredError

from bus.cluster import refresh_slots, transient
from bus.redis_io.mux import Mux

if TYPE_CHECKING:
    from redis.asyncio.cluster import ClusterNode, RedisCluster
    from redis.asyncio.connection import AbstractConnection


def key_of(args: tuple[Any, ...]) -> Any:
    """The key a command is routed by (a script's first key)."""
    if str(args[0]).upper() in ("EVALSHA", "EVAL", "FCALL"):
        return args[3]
    return args[1]


class ClusterMux:
    """One `Mux` per master, each command sent to its slot's master.

    A command answered with MOVED (the slot's master changed: a failover), or failed by a
    broken connection, is sent again once the slot map is re-read, for up to ``patience_s``
    (a failover takes the cluster's node timeout plus an election). Commands sent here must
    be safe to repeat (the commit script is: a step already done is only acked).
    """

    def __init__(self, cluster: RedisCluster, *, patience_s: float = 15.0) -> None:
        self._cluster = cluster
        self._by_node: dict[str, Mux] = {}
        self._patience_s = patience_s

    def _mux(self, key: Any) -> Mux:
        node = self._cluster.get_node_from_key(key)
        if node is None:  # no master for the slot (failing over): retried
            raise SlotNotCoveredError(f"no master serves the slot of {key!r}")
        mux = self._by_node.get(node.name)
        if mux is None:
            mux = self._by_node[node.name] = Mux(None, connect=lambda: _open(node))
        return mux

    async def execute(self, *args: Any) -> Any:
        """Send one command to its slot's master; its reply."""
        return await self._routed(args, None)

    async def execute_then(self, then: tuple[Any, ...], *args: Any) -> tuple[Any, Any]:
        """Send a command, and ``then`` behind it on the same master; both replies."""
        return await self._routed(args, then)

    async def _routed(self, args: tuple[Any, ...], then: tuple[Any, ...] | None) -> Any:
        key = key_of(args)
        loop = asyncio.get_running_loop()
        give_up = loop.time() + self._patience_s
        delay = 0.05
        while True:
            try:
                mux = self._mux(key)
                if then is None:
                    return await mux.execute(*args)
                return await mux.execute_then(then, *args)
            except Exception as e:
                if not transient(e) or loop.time() + delay > give_up:
                    raise
            await asyncio.sleep(delay)
            delay = min(1.0, delay * 2)
            await self._refresh()

    async def _refresh(self) -> None:
        """Re-read the slot map; close the connections of nodes that are no masters now."""
        if not await refresh_slots(self._cluster):  # still failing over: tried again later
            return
        masters = {n.name for n in self._cluster.get_primaries()}
        for name in [n for n in self._by_node if n not in masters]:
            await self._by_node.pop(name).aclose()

    async def aclose(self) -> None:
        """Close every master's connection."""
        muxes, self._by_node = list(self._by_node.values()), {}
        await asyncio.gather(*(m.aclose() for m in muxes), return_exceptions=True)


async def _open(node: ClusterNode) -> AbstractConnection:
    """A connection of the mux's own to ``node`` (not from the node's pool)."""
    conn = node.connection_class(**node.connection_kwargs)
    await conn.connect()
    return conn
