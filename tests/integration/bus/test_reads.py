"""A consumer's reads on their own connection (bus.runtime.reads) on a real Redis: entries
come back as the stream holds them, an error reply keeps the connection in step, a dropped
connection fails the read under way and the next read reconnects."""

from __future__ import annotations

import asyncio

import pytest
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from bus.runtime.reads import GroupReads


async def test_reads_new_entries_of_every_stream(real_redis: Redis) -> None:
    for stream in ("s:a", "s:b"):
        await real_redis.xgroup_create(stream, "g", "$", mkstream=True)
    reads = GroupReads(real_redis, "g", "c", ["s:a", "s:b"])
    assert await reads.read(10, None) == []
    first = await real_redis.xadd("s:a", {"data": "1", "x": ""})
    second = await real_redis.xadd("s:b", {"data": "2"})
    got = await reads.read(10, 100)
    assert got == [("s:a", first, {b"data": b"1", b"x": b""}), ("s:b", second, {b"data": b"2"})]
    assert await reads.read(10, 10) == []  # delivered once; a block that times out: none
    await reads.aclose()


async def test_an_error_reply_keeps_the_connection(real_redis: Redis) -> None:
    reads = GroupReads(real_redis, "missing", "c", ["s:none"])
    with pytest.raises(ResponseError, match="NOGROUP"):
        await reads.read(1, None)
    await real_redis.xgroup_create("s:none", "missing", "$", mkstream=True)
    assert await reads.read(1, None) == []
    await reads.aclose()


async def test_a_dropped_connection_fails_the_read_and_the_next_reconnects(
    real_redis: Redis,
) -> None:
    await real_redis.xgroup_create("s:k", "g", "$", mkstream=True)
    reads = GroupReads(real_redis, "g", "c", ["s:k"])
    assert await reads.read(1, None) == []  # connected
    conn = reads._held._conn  # pyright: ignore[reportPrivateUsage]
    assert conn is not None
    await conn.send_command("CLIENT", "ID")
    victim = await conn.read_response()
    blocked = asyncio.ensure_future(reads.read(1, 5_000))
    await asyncio.sleep(0.1)
    await real_redis.execute_command("CLIENT", "KILL", "ID", victim)
    with pytest.raises(RedisConnectionError):
        await asyncio.wait_for(blocked, 5)
    entry = await real_redis.xadd("s:k", {"data": "after"})
    assert await reads.read(1, 1_000) == [("s:k", entry, {b"data": b"after"})]
    await reads.aclose()
