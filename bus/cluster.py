"""Redis Cluster: the client, and the commit path's connections, one per master.

With ``AGENTBUS_REDIS_CLUSTER=true`` every process talks to the cluster through redis-py's
`RedisCluster`, which routes each command by its key's slot. The runtime's keys carry
their shard's hash tag (`bus.keys`), so every commit script, transaction and multi-key read
touches one slot. Code typed against `Redis` gets the cluster client unchanged (it has the
same command methods); the few places that must act differently ask `as_cluster`.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, cast

from redis.asyncio.cluster import ClusterNode, NodesManager, RedisCluster
from redis.cluster import PRIMARY, REPLICA
from redis.exceptions import (
    AskError,
    ClusterDownError,
    MovedError,
    ReadOnlyError,
    RedisClusterException,
    SlotNotCoveredError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

if TYPE_CHECKING:
    from redis.asyncio import Redis

#: Replies and failures after which the slot map is re-read and the command sent again
#: (a failover or a slot migration in progress). The commit script is idempotent.
_TRANSIENT = (
    RedisConnectionError,
    RedisTimeoutError,
    MovedError,
    AskError,
    TryAgainError,
    ClusterDownError,
    ReadOnlyError,
    SlotNotCoveredError,
    RedisClusterException,
    OSError,
)


class _NodesManager(NodesManager):
    """redis-py's slot map, fixed so that no node with open connections goes unclosed.

    redis-py 7.4's ``initialize`` keeps the node objects it knew in ``nodes_cache`` but
    points the slot map at fresh ones, which then open connections of their own and are
    dropped, still connected, by the next ``initialize`` (every MOVED or connection error
    runs one): "Unclosed ClusterNode" warnings and leaked sockets. Here the slot map is
    pointed back at the known nodes (their role updated), and nodes dropped from the
    cache are remembered so `close_cluster` closes them.
    """

    __slots__ = ()

    async def initialize(self) -> None:
        """Re-read the slot map, then make it use the cached node objects."""
        await super().initialize()
        cache = self.nodes_cache
        canonical: dict[int, list[ClusterNode]] = {}
        for slot, nodes in list(self.slots_cache.items()):  # the old lists stay alive
            same = canonical.get(id(nodes))
            if same is None:
                same = canonical[id(nodes)] = [cache.setdefault(n.name, n) for n in nodes]
                for i, node in enumerate(same):
                    node.server_type = REPLICA if i else PRIMARY
            self.slots_cache[slot] = same

    def set_nodes(
        self,
        old: dict[str, ClusterNode],
        new: dict[str, ClusterNode],
        remove_old: bool = False,
    ) -> None:
        # A node dropped from the slot map (a failed master) keeps the connections that
        # were in use at that moment; they are closed with the client.
        if remove_old:
            dropped = [node for name, node in old.items() if name not in new]
            _RETIRED.setdefault(id(self), []).extend(dropped)
        super().set_nodes(old, new, remove_old)


#: Options of XREAD/XREADGROUP before STREAMS, and how many values each takes.
_READ_OPTIONS = {b"COUNT": 1, b"BLOCK": 1, b"GROUP": 2, b"NOACK": 0}


def stream_read_keys(args: tuple[Any, ...]) -> list[Any] | None:
    """The keys of ``XREAD``/``XREADGROUP`` arguments (after the command name), or None
    when they don't parse."""
    i = 0
    while i < len(args):
        word = args[i]
        if not isinstance(word, str | bytes):
            return None
        option = (word.encode() if isinstance(word, str) else word).upper()
        if option == b"STREAMS":
            rest = args[i + 1 :]
            return list(rest[: len(rest) // 2]) if rest and len(rest) % 2 == 0 else None
        if option not in _READ_OPTIONS:
            return None
        i += 1 + _READ_OPTIONS[option]
    return None


class _Cluster(RedisCluster):
    """Finds the slot of a stream read itself. redis-py asks a node (``COMMAND GETKEYS``,
    a round trip) for every command whose keys may move, and XREAD/XREADGROUP are the
    workers' and the relay's every read: measured by `bench turn`, that doubled the
    workers' CPU per run on a cluster."""

    async def _determine_slot(self, command: str, *args: Any) -> int:  # pyright: ignore[reportIncompatibleMethodOverride]
        if command.upper() in ("XREAD", "XREADGROUP"):
            keys = stream_read_keys(args)
            if keys:
                slots = {self.keyslot(key) for key in keys}  # pyright: ignore[reportUnknownMemberType]
                if len(slots) == 1:
                    return slots.pop()
        return await super()._determine_slot(command, *args)  # pyright: ignore[reportUnknownMemberType]


def open_cluster(url: str) -> Redis:
    """A cluster client for ``url`` (any node); typed as `Redis`, whose commands it has.

    Close it with `close_cluster`, which also closes what ``aclose`` misses.
    """
    client = _Cluster.from_url(url, socket_keepalive=True)
    client.nodes_manager.__class__ = _NodesManager
    return cast("Redis", client)


async def close_cluster(redis: Redis) -> None:
    """Close a client of `open_cluster` and every node connection it ever opened.

    ``RedisCluster.aclose`` does nothing while the client is flagged for re-initialising
    (which a connection error sets), and never reaches nodes dropped from the slot map:
    both would leave sockets open. Here every known node is disconnected regardless.
    """
    cluster = as_cluster(redis)
    if cluster is None:
        return
    await cluster.aclose()
    manager = cluster.nodes_manager
    nodes = [
        *manager.nodes_cache.values(),
        *manager.startup_nodes.values(),
        *_RETIRED.pop(id(manager), []),
    ]
    await asyncio.gather(*(n.disconnect() for n in nodes), return_exceptions=True)


#: Nodes dropped from each client's slot map (by its nodes manager's id), until closed.
_RETIRED: dict[int, list[ClusterNode]] = {}


def as_cluster(redis: Redis | RedisCluster) -> RedisCluster | None:
    """``redis`` as a cluster client, or None for a single server."""
    return redis if isinstance(redis, RedisCluster) else None


def is_cluster(redis: Redis | RedisCluster) -> bool:
    """Whether ``redis`` is a cluster client."""
    return isinstance(redis, RedisCluster)


#: Slot-map reads under way, by nodes manager (its id): callers at the same time share one.
_REFRESHING: dict[int, asyncio.Future[bool]] = {}


async def refresh_slots(cluster: RedisCluster) -> bool:
    """Re-read the slot map; False when that failed (still failing over: try again later).

    Everyone who finds the slot moved asks at once after a failover (every reader and the
    commit path); they share one read.
    """
    key = id(cluster.nodes_manager)
    pending = _REFRESHING.get(key)
    if pending is None:
        pending = _REFRESHING[key] = asyncio.ensure_future(_reread(cluster))
        pending.add_done_callback(lambda _: _REFRESHING.pop(key, None))
    return await asyncio.shield(pending)


async def _reread(cluster: RedisCluster) -> bool:
    try:
        await cluster.nodes_manager.initialize()
    except Exception:
        return False
    return True


def transient(error: BaseException) -> bool:
    """Whether ``error`` is an unreachable node or a failover/slot move in progress: the
    same command may succeed once the cluster (or the server) is back."""
    return isinstance(error, _TRANSIENT)
