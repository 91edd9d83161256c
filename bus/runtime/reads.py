"""A consumer's group reads (``XREADGROUP``) on a connection of their own.

Every blocking read holds a connection for as long as it blocks, so each reader of a
`bus.runtime.consumer.StreamConsumer` keeps one and sends its reads on it directly,
packed by `bus.redis_io.mux.pack`, as the mux sends commits. That skips what redis-py's
client does per command (a pool checkout, a retry wrapper, the reply callback and, on a
cluster, the routing), which a step's reads paid on every entry: measured here, ~55 µs of
CPU per read through the cluster client and ~40 through the plain one, ~15 this way.

On a Redis Cluster the connection goes to the master of the streams' slot (the streams of
one reader share a slot). A broken connection or a reply that says the slot moved
(``MOVED``, a failover) drops the connection and re-reads the slot map; the error goes to
the caller, which retries, and the next read connects to the slot's master now.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from redis.exceptions import ResponseError, SlotNotCoveredError

from bus.cluster import as_cluster, refresh_slots, transient
from bus.redis_io.mux import pack
from bus.redis_io.replies import read_reply

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from redis.asyncio.connection import AbstractConnection

#: One entry as read: its stream, id and fields.
RawEntry = tuple[str, bytes, dict[bytes, bytes]]


class HeldConnection:
    """A connection kept for one caller's own packed commands (blocking reads, mostly).

    The pool's on one Redis; on a Redis Cluster, the master of ``key``'s slot. A broken
    connection, or a reply that says the slot moved (``MOVED``, a failover), drops it (and
    re-reads the slot map); an ordinary error reply keeps it, being in step. Used by
    :class:`GroupReads` and the API's relay (``api.streams.relay_xread``).

    Args:
        redis: the client whose pool (or cluster nodes) the connection comes from.
        key: a key of the slot the commands touch (ignored on one Redis).
    """

    def __init__(self, redis: Redis, key: str) -> None:
        self._redis = redis
        self._cluster = as_cluster(redis)
        self._key = key
        self._conn: AbstractConnection | None = None

    async def call(self, packed: bytes) -> Any:
        """Send one packed command and return its raw reply (redis-py's parser).

        Raises what the server or the connection raised (an error reply as redis-py's
        `ResponseError` subclasses), after dropping the connection unless the reply left it
        in step. A cancelled call drops it too: its reply would be out of step.
        """
        conn = self._conn
        if conn is None:
            conn = await self._connect()
        elif not conn.is_connected:  # closed under us (the pool's disconnect): reopen it
            await conn.connect()
        try:
            conn._writer.writelines((packed,))  # pyright: ignore[reportAttributeAccessIssue, reportPrivateUsage, reportOptionalMemberAccess, reportUnknownMemberType]
            return cast("object", await read_reply(conn))  # any RESP reply
        except BaseException as e:
            await self._failed(e)
            raise

    async def call_then(self, packed: bytes, then: bytes) -> tuple[Any, Any]:
        """Send a packed command and ``then`` behind it in one write; both raw replies.

        Redis runs ``then`` once the first command is served (a blocking read: once it
        returns), so what ``then`` reads is as of after the first's reply. An error reply to
        either raises, as :meth:`call` does, once both replies are in (the connection stays
        in step).
        """
        conn = self._conn
        if conn is None:
            conn = await self._connect()
        elif not conn.is_connected:
            await conn.connect()
        try:
            conn._writer.writelines((packed, then))  # pyright: ignore[reportAttributeAccessIssue, reportPrivateUsage, reportOptionalMemberAccess, reportUnknownMemberType]
            first: object
            try:
                first = cast("object", await read_reply(conn))
            except ResponseError as e:  # still in step: the second reply follows
                first = e
            second = cast("object", await read_reply(conn))
            if isinstance(first, ResponseError):
                raise first
            return first, second
        except BaseException as e:
            await self._failed(e)
            raise

    async def _failed(self, e: BaseException) -> None:
        """Drop the connection after a failure, unless the reply left it in step."""
        if not isinstance(e, ResponseError) or transient(e):
            await self._drop(refresh=isinstance(e, Exception) and transient(e))

    async def _connect(self) -> AbstractConnection:
        if self._cluster is None:
            conn = await self._redis.connection_pool.get_connection()  # pyright: ignore[reportUnknownMemberType] (redis-py)
        else:
            node = self._cluster.get_node_from_key(self._key)
            if node is None:  # no master for the slot (failing over): the caller retries
                raise SlotNotCoveredError(f"no master serves the slot of {self._key!r}")
            conn = node.connection_class(**node.connection_kwargs)
            await conn.connect()
        self._conn = conn
        return conn

    async def _drop(self, *, refresh: bool) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.disconnect()
            if self._cluster is None:
                await self._redis.connection_pool.release(conn)
        if refresh and self._cluster is not None:
            await refresh_slots(self._cluster)

    async def aclose(self) -> None:
        """Give the connection back (to the pool, or close a cluster node's)."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if self._cluster is None:
            await self._redis.connection_pool.release(conn)
        else:
            await asyncio.shield(conn.disconnect())


class GroupReads:
    """``XREADGROUP`` of new entries of ``streams`` for one consumer, on its own connection.

    With ``watch``, each read also gets those keys' values (``MGET``, sent in the same
    write right behind the read, so Redis reads them once the read is served: after its
    entries were delivered), in `seen`. That is how a step learns, at no round trip of its
    own, whether anything it caches moved (`bus.tenant_versions`).

    Args:
        redis: the broker client (a cluster client: the connection goes to the slot's master).
        group: the consumer group.
        consumer: this consumer's name in it.
        streams: the streams read together (on a cluster, of one slot).
        watch: keys read behind every read (on a cluster, of the streams' slot).
    """

    def __init__(
        self,
        redis: Redis,
        group: str,
        consumer: str,
        streams: list[str],
        watch: Sequence[str] = (),
    ) -> None:
        self._held = HeldConnection(redis, streams[0])
        self._head = ("XREADGROUP", "GROUP", group, consumer, "COUNT")
        self._tail = ("STREAMS", *streams, *(">" for _ in streams))
        self._watch = list(watch)
        self._mget = pack(("MGET", *watch)) if watch else b""
        #: The ``watch`` keys' values as read behind the last read, by key.
        self.seen: dict[str, bytes | None] = {}

    async def read(self, count: int, block_ms: int | None) -> list[RawEntry]:
        """Up to ``count`` new entries, waiting up to ``block_ms`` for one (None: not at all).

        Raises what :meth:`HeldConnection.call` raises.
        """
        block = () if block_ms is None else ("BLOCK", block_ms)
        packed = pack((*self._head, count, *block, *self._tail))
        reply: Any
        if self._mget:
            reply, values = await self._held.call_then(packed, self._mget)
            self.seen = dict(zip(self._watch, cast("list[bytes | None]", values), strict=True))
        else:
            reply = await self._held.call(packed)
        if not reply:
            return []
        return [
            (stream.decode(), eid, _fields(values))
            for stream, items in reply
            for eid, values in items
        ]

    async def aclose(self) -> None:
        """Give the connection back."""
        await self._held.aclose()


def _fields(values: list[bytes] | None) -> dict[bytes, bytes]:
    if not values:  # an entry deleted while pending reads as nil
        return {}
    return dict(zip(values[::2], values[1::2], strict=True))
