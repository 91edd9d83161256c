"""The cheap unread-data check of bus.connection, on a real Redis: a stray reply is seen, and
the pool never lends a connection that has one."""

from __future__ import annotations

import asyncio

from redis.asyncio import ConnectionPool, Redis

from bus.connection import BufferCheckConnection, connection_class
from tests.conftest import TEST_REDIS_URL


async def test_a_reply_nobody_read_is_seen_and_a_read_one_is_not() -> None:
    pool = ConnectionPool.from_url(TEST_REDIS_URL, connection_class=BufferCheckConnection)
    conn = await pool.get_connection()
    try:
        assert isinstance(conn, BufferCheckConnection)
        assert not await conn.can_read_destructive()
        await conn.send_command("PING")  # its reply is left unread
        await asyncio.sleep(0.05)  # the loop moves it into the stream reader
        assert await conn.can_read_destructive()
        assert await conn.read_response() == b"PONG"
        assert not await conn.can_read_destructive()
    finally:
        await pool.release(conn)
        await pool.aclose()


async def test_the_pool_replaces_a_connection_left_with_a_stray_reply() -> None:
    pool = ConnectionPool.from_url(TEST_REDIS_URL, connection_class=BufferCheckConnection)
    client = Redis(connection_pool=pool)
    try:
        conn = await pool.get_connection()
        await conn.send_command("ECHO", "stale")
        await asyncio.sleep(0.05)
        await pool.release(conn)  # returned with an unread reply, as a bug would
        # The next command must get its own reply, not the stale one.
        assert await client.echo("fresh") == b"fresh"
    finally:
        await client.aclose()
        await pool.aclose()


def test_tls_and_unknown_schemes_keep_redis_py_connections() -> None:
    assert connection_class("redis://h:6379/0") is BufferCheckConnection
    unix = connection_class("unix:///tmp/r.sock")
    assert unix is not None and unix.__name__ == "BufferCheckUnixConnection"
    assert connection_class("rediss://h:6380/0") is None
