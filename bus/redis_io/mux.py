"""One Redis connection shared by every step of a process, commands pipelined.

A step's writes (its commit script, its streamed events) go out on one connection as soon
as they are made, and a reader task hands each reply to its caller in order: Redis answers
the commands of one connection in the order they arrived. That skips what redis-py's
client does per command (a pool checkout, a retry wrapper, observability hooks, the
release), which measured here ~45 µs of CPU per command under load and ~40 µs of latency
at concurrency 1, and it lets concurrent steps' commands share socket writes.

An error reply fails only its own command; a broken connection fails every command in
flight (their callers retry, as they would with redis-py's client: the commit script is
idempotent) and the next command opens a new connection. Blocking reads (XREADGROUP) do
not come here: they would hold up every reply behind them. Writes are not flow-controlled
(no ``drain``): what is buffered is bounded by the steps in flight.

On a Redis Cluster (`bus.cluster`) there is one such connection per master, and a
command goes to the master of its first key's slot (`bus.redis_io.cluster_mux`); a
process's one mux per client is `bus.redis_io.shared_mux.mux_for`.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, cast

import hiredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from bus.redis_io.replies import read_reply

#: hiredis's packer (its stub leaves the return type unknown).
_hiredis_pack = cast(
    "Callable[[tuple[Any, ...]], bytes]",
    hiredis.pack_command,  # pyright: ignore[reportUnknownMemberType]
)

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from redis.asyncio.connection import AbstractConnection


def pack(args: tuple[Any, ...]) -> bytes:
    """One command in the Redis protocol (RESP): ``str`` as UTF-8, ``int`` in decimal.

    hiredis's C packer writes the same bytes as redis-py's ``pack_command`` (a test checks
    it) at a fraction of its cost: a step's commit script of ~30 arguments took ~100 µs in
    redis-py's, ~15 µs in the Python loop below and ~6 µs in hiredis on this host. What
    hiredis refuses (an int subclass, a bool, a None) goes through the Python loop, which
    packs the first and raises a ``TypeError`` that names the others.
    """
    try:
        return _hiredis_pack(args)
    except TypeError:
        return _pack_each(args)


def _pack_each(args: tuple[Any, ...]) -> bytes:
    parts = [b"*%d\r\n" % len(args)]
    append = parts.append
    for arg in args:
        if type(arg) is str:
            arg = arg.encode()
        elif type(arg) is int:
            arg = b"%d" % arg
        elif not isinstance(arg, bytes):
            arg = _slow(arg)
        append(b"$%d\r\n" % len(arg))
        append(arg)
        append(b"\r\n")
    return b"".join(parts)


def _slow(arg: Any) -> bytes:
    # A str or int subclass (an enum), a float, a memoryview: as redis-py sends them.
    if isinstance(arg, bool):
        raise TypeError("cannot send a bool to Redis: convert it to an int or a string")
    if isinstance(arg, str):
        return arg.encode()
    if isinstance(arg, int):
        return b"%d" % arg
    if isinstance(arg, float):
        return repr(arg).encode()
    if isinstance(arg, memoryview):
        return arg.tobytes()
    raise TypeError(f"cannot send a {type(arg).__name__} to Redis")


class Mux:
    """Pipelines commands over one connection taken from ``redis``'s pool.

    Args:
        redis: whose pool lends the connection, or None with ``connect``.
        connect: opens a connection instead (a cluster node's, owned by the mux).
    """

    def __init__(
        self,
        redis: Redis | None,
        *,
        connect: Callable[[], Awaitable[AbstractConnection]] | None = None,
    ) -> None:
        self._redis = redis
        self._open = connect
        self._conn: AbstractConnection | None = None
        self._connecting: asyncio.Lock | None = None
        self._waiting: collections.deque[asyncio.Future[Any]] = collections.deque()
        self._reader: asyncio.Task[None] | None = None
        self._unsent: list[bytes] = []  # packed commands, written together

    async def execute(self, *args: Any) -> Any:
        """Send one command; its reply (an error reply raises ``ResponseError``).

        Commands made in the same turn of the event loop leave in one write (corking):
        under load that is one system call for many steps' commands.
        """
        if self._conn is None:
            await self._connect()
        return await self._queue(args)

    async def execute_then(self, then: tuple[Any, ...], *args: Any) -> tuple[Any, Any]:
        """Send a command and ``then`` right behind it on the same connection (``WAIT``
        after a write waits for that write); both replies, the first one's error first."""
        if self._conn is None:
            await self._connect()
        first, second = self._queue(args), self._queue(then)
        try:
            return await first, await second
        finally:
            if not second.done():  # the first failed: nobody awaits the second
                second.cancel()
            elif not second.cancelled():
                second.exception()  # retrieved: a failure of both is reported once

    def _queue(self, args: tuple[Any, ...]) -> asyncio.Future[Any]:
        packed = pack(args)  # first: a command that cannot be sent queues nothing
        done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        # No await between queueing the future and the command: replies come back in the
        # order commands were written, and the futures must be in that order too.
        self._waiting.append(done)
        if not self._unsent:
            asyncio.get_running_loop().call_soon(self._flush)
        self._unsent.append(packed)
        return done

    def _flush(self) -> None:
        unsent, self._unsent = self._unsent, []
        conn = self._conn
        if conn is None or not unsent:  # broke meanwhile (its commands failed), or sent
            return
        try:
            conn._writer.writelines(unsent)  # pyright: ignore[reportAttributeAccessIssue, reportPrivateUsage, reportOptionalMemberAccess, reportUnknownMemberType]
        except Exception as e:
            self._broken(conn, e)

    async def _connect(self) -> AbstractConnection:
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            if self._conn is None:
                if self._open is not None:
                    conn = await self._open()
                else:
                    assert self._redis is not None
                    conn = await self._redis.connection_pool.get_connection()  # pyright: ignore[reportUnknownMemberType] (redis-py)
                self._conn = conn
                self._reader = asyncio.get_running_loop().create_task(self._read(conn))
            return self._conn

    async def _read(self, conn: AbstractConnection) -> None:
        try:
            while True:
                try:
                    reply = cast("object", await read_reply(conn))  # any RESP reply
                except ResponseError as e:  # an error reply: the stream is still in step
                    self._pop().set_exception(e)
                    continue
                self._pop().set_result(reply)
        except asyncio.CancelledError:  # shutting down: fail what waits, close nothing here
            self._broken(conn, RedisConnectionError("connection closed"), disconnect=False)
            raise
        except BaseException as e:
            self._broken(conn, e)

    def _pop(self) -> asyncio.Future[Any]:
        done = self._waiting.popleft()
        if done.done():  # its caller was cancelled; the reply is dropped
            return asyncio.get_running_loop().create_future()
        return done

    def _broken(
        self, conn: AbstractConnection, error: BaseException, *, disconnect: bool = True
    ) -> None:
        """Fail everything in flight on ``conn`` and let the next command reconnect."""
        if self._conn is not conn:
            return
        self._conn = None
        self._unsent = []  # never sent: they fail with the rest
        failure = error if isinstance(error, Exception) else RedisConnectionError(str(error))
        while self._waiting:
            done = self._waiting.popleft()
            if not done.done():
                done.set_exception(failure)
        if disconnect:
            asyncio.get_running_loop().create_task(conn.disconnect(nowait=True))
        if self._reader is not None and self._reader is not asyncio.current_task():
            self._reader.cancel()
        self._reader = None

    async def aclose(self) -> None:
        """Close the connection (commands in flight fail) and wait until it is closed."""
        conn, reader = self._conn, self._reader
        if conn is None:
            return
        self._broken(conn, RedisConnectionError("closed"), disconnect=False)
        if reader is not None:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
        await conn.disconnect()
