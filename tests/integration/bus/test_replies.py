"""bus.redis_io.replies on a real Redis: every kind of reply comes out as redis-py's own
``read_response`` gives it, an error reply raises its own class and leaves the connection
in step, and a connection closed under a read raises a connection error."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError

from bus.redis_io.mux import pack
from bus.redis_io.replies import read_reply

COMMANDS: list[tuple[Any, ...]] = [
    ("SET", "k", "v"),  # a status
    ("GET", "k"),  # a bulk string
    ("GET", "missing"),  # nil
    ("INCR", "n"),  # an integer
    ("RPUSH", "l", "a", "b"),
    ("LRANGE", "l", 0, -1),  # an array
    ("XADD", "s", "*", "data", "x"),
    ("XRANGE", "s", "-", "+"),  # nested arrays
    ("MGET", "k", "missing"),  # an array holding nil
]


async def _replies(redis: Redis, read: Any) -> list[Any]:
    conn = await redis.connection_pool.get_connection()  # pyright: ignore[reportUnknownMemberType]
    try:
        out: list[Any] = []
        for command in COMMANDS:
            conn._writer.writelines((pack(command),))  # pyright: ignore[reportAttributeAccessIssue, reportPrivateUsage, reportOptionalMemberAccess, reportUnknownMemberType]
            out.append(await read(conn))
        return out
    finally:
        await redis.connection_pool.release(conn)


async def _redis_py_reply(conn: Any) -> Any:
    return await conn.read_response()


async def test_every_kind_of_reply_reads_as_redis_py_reads_it(real_redis: Redis) -> None:
    ours = await _replies(real_redis, read_reply)
    await real_redis.flushdb()
    theirs = await _replies(real_redis, _redis_py_reply)
    # The stream entries' ids differ between the two passes; everything else is equal.
    ours[6] = theirs[6] = None
    ours[7] = [row[1] for row in ours[7]]
    theirs[7] = [row[1] for row in theirs[7]]
    assert ours == theirs


async def test_an_error_reply_raises_its_class_and_the_connection_stays_in_step(
    real_redis: Redis,
) -> None:
    conn = await real_redis.connection_pool.get_connection()  # pyright: ignore[reportUnknownMemberType]
    try:
        writer: Any = conn._writer  # pyright: ignore[reportAttributeAccessIssue, reportPrivateUsage, reportUnknownMemberType]
        writer.writelines((pack(("EVALSHA", "0" * 40, 0)), pack(("ECHO", "after"))))
        with pytest.raises(NoScriptError):
            await read_reply(conn)
        assert await read_reply(conn) == b"after"
    finally:
        await real_redis.connection_pool.release(conn)


async def test_a_connection_closed_under_a_read_raises_a_connection_error(
    real_redis: Redis,
) -> None:
    conn = await real_redis.connection_pool.get_connection()  # pyright: ignore[reportUnknownMemberType]
    try:
        await conn.send_command("CLIENT", "SETNAME", "replies-under-test")
        assert await read_reply(conn) == b"OK"
        conn._writer.writelines((pack(("BLPOP", "never-filled", 5)),))  # pyright: ignore[reportAttributeAccessIssue, reportPrivateUsage, reportOptionalMemberAccess, reportUnknownMemberType]
        blocked = asyncio.ensure_future(read_reply(conn))
        await asyncio.sleep(0.1)
        (victim,) = [c for c in await real_redis.client_list() if c["name"] == "replies-under-test"]
        await real_redis.execute_command("CLIENT", "KILL", "ID", victim["id"])
        with pytest.raises(RedisConnectionError):
            await asyncio.wait_for(blocked, 5)
    finally:
        await conn.disconnect()
        await real_redis.connection_pool.release(conn)
