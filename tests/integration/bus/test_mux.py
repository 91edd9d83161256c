"""The pipelined connection of bus.redis_io.mux on a real Redis: every caller gets its own
reply, an error reply fails one command, a dropped connection fails what was in flight
and the next command reconnects."""

from __future__ import annotations

import asyncio
import random

import pytest
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from bus.redis_io.mux import Mux
from bus.redis_io.shared_mux import mux_for


async def test_concurrent_callers_each_get_their_own_reply(real_redis: Redis) -> None:
    mux = mux_for(real_redis)
    assert mux_for(real_redis) is mux

    async def echo(i: int) -> bytes:
        await asyncio.sleep(random.random() / 100)  # interleave the callers
        return await mux.execute("ECHO", f"m{i}")

    replies = await asyncio.gather(*(echo(i) for i in range(300)))
    assert replies == [f"m{i}".encode() for i in range(300)]
    await mux.aclose()


async def test_an_error_reply_fails_only_its_own_command(real_redis: Redis) -> None:
    mux = Mux(real_redis)
    await real_redis.set("text", "not a number")
    results = await asyncio.gather(
        mux.execute("ECHO", "before"),
        mux.execute("INCR", "text"),
        mux.execute("ECHO", "after"),
        return_exceptions=True,
    )
    assert results[0] == b"before" and results[2] == b"after"
    assert isinstance(results[1], ResponseError)
    assert await mux.execute("PING") == b"PONG"  # the connection is still in step
    await mux.aclose()


async def test_a_dropped_connection_fails_in_flight_commands_and_the_next_reconnects(
    real_redis: Redis,
) -> None:
    mux = Mux(real_redis)
    await mux.execute("CLIENT", "SETNAME", "mux-under-test")
    blocked = asyncio.ensure_future(mux.execute("BLPOP", "never-filled", 5))
    await asyncio.sleep(0.1)
    clients = await real_redis.client_list()
    (victim,) = [c for c in clients if c.get("name") == "mux-under-test"]
    await real_redis.execute_command("CLIENT", "KILL", "ID", victim["id"])
    with pytest.raises(RedisConnectionError):
        await asyncio.wait_for(blocked, 5)
    assert await mux.execute("ECHO", "again") == b"again"  # a new connection
    await mux.aclose()


async def test_a_break_before_the_write_fails_the_queued_command_and_not_the_next(
    real_redis: Redis,
) -> None:
    mux = Mux(real_redis)
    assert await mux.execute("PING") == b"PONG"  # connected
    queued = asyncio.ensure_future(mux.execute("ECHO", "lost"))
    await asyncio.sleep(0)  # queued for the next write, not written yet
    mux._broken(mux._conn, RedisConnectionError("dropped"))  # pyright: ignore[reportPrivateUsage, reportArgumentType]
    with pytest.raises(RedisConnectionError):
        await queued
    assert await asyncio.wait_for(mux.execute("ECHO", "next"), 5) == b"next"
    await mux.aclose()
