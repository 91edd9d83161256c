"""A connection's next reply, read straight from its hiredis parser.

redis-py's ``read_response`` runs each reply through two coroutines, formats the
connection's address for an error it seldom raises and compares the protocol twice,
on every reply. The mux's reader (`bus.redis_io.mux`) and the workers' held reads
(`bus.runtime.reads`) take every reply of a connection they own, so they read it from the
hiredis reader and the stream reader themselves: the objects `bus.connection` checks for
unread data (tests/integration/bus/test_redis_internals.py names them). Errors come out
as redis-py's: an error reply raises its `ResponseError`, a closed or failed socket a
`ConnectionError`. With another parser, or RESP3, redis-py reads it.
"""

from __future__ import annotations

from typing import Any, cast

from redis._parsers.hiredis import NOT_ENOUGH_DATA, _AsyncHiredisParser  # pyright: ignore[reportPrivateUsage]
from redis.asyncio.connection import AbstractConnection
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

#: How much one socket read takes at most (redis-py's own default).
_READ_SIZE = 65536
#: redis-py's own reader: a connection class that replaces it is read through it.
_READ_RESPONSE = AbstractConnection.read_response


async def read_reply(conn: AbstractConnection) -> Any:
    """The next reply on ``conn``, as ``conn.read_response()`` gives it (any RESP reply).

    Raises:
        ResponseError: the reply is an error reply (the connection stays in step).
        ConnectionError: the connection closed or failed; the caller drops it.
    """
    if (
        type(conn).read_response is not _READ_RESPONSE  # a connection of its own (a fake's)
        or type(conn._parser) is not _AsyncHiredisParser  # pyright: ignore[reportPrivateUsage]
        or conn.protocol not in (2, "2")
    ):
        return cast("object", await conn.read_response())
    parser: Any = conn._parser  # pyright: ignore[reportPrivateUsage]
    reader: Any = parser._reader
    reply: Any = reader.gets()
    while reply is NOT_ENOUGH_DATA:
        if not parser._connected:
            raise RedisConnectionError("Connection closed by server.")
        try:
            data = await parser._stream.read(_READ_SIZE)
        except OSError as e:
            raise RedisConnectionError(f"Error while reading from Redis: {e.args}") from e
        if not data:
            raise RedisConnectionError("Connection closed by server.")
        reader.feed(data)
        reply = reader.gets()
    # In redis-py's order: an error the parser maps to a connection error (LOADING), then
    # an error reply.
    if isinstance(reply, RedisConnectionError):
        raise reply
    if type(reply) is list:
        items = cast("list[object]", reply)
        if items and isinstance(items[0], RedisConnectionError):
            raise items[0]
    if isinstance(reply, ResponseError):
        raise reply
    return cast("object", reply)
