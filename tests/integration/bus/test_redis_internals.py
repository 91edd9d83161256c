"""The private parts of redis-py (and asyncio) the commit path relies on, checked by name.

`bus.redis_io.mux` writes pipelined commands straight to a connection's stream writer, and
`bus.connection` answers the pool's unread-data check from the hiredis parser's and the
stream reader's buffers. None of that is public API, so pyproject.toml pins redis to the
versions tested; if an upgrade moves one of these, a test here fails and says which
attribute and which module, instead of the commit path breaking (or slowing) at run time.
"""

from __future__ import annotations

import asyncio
import importlib
import types
from typing import Any

import pytest
import redis
import redis.utils
from redis.asyncio import ConnectionPool

from bus.connection import BufferCheckConnection
from tests.conftest import TEST_REDIS_URL

MUX = "bus/redis_io/mux.py (pipelined commits)"
CHECK = "bus/connection.py (the pool's cheap unread-data check)"
REPLIES = "bus/redis_io/replies.py (replies read from the hiredis parser)"


def internal(owner: object, name: str, used_by: str) -> Any:
    """``owner.name``, or a failure naming the attribute, its owner and who needs it."""
    if not hasattr(owner, name):
        if isinstance(owner, types.ModuleType):
            where = owner.__name__
        else:
            kind = owner if isinstance(owner, type) else type(owner)
            where = f"{kind.__module__}.{kind.__qualname__}"
        pytest.fail(
            f"redis {redis.__version__}: {where} has no attribute {name!r} any more; "
            f"{used_by} relies on it. Adapt that module before widening the redis "
            f"version range in pyproject.toml."
        )
    return getattr(owner, name)


def test_the_hiredis_parser_and_its_sentinel_are_where_the_check_imports_them() -> None:
    module = importlib.import_module("redis._parsers.hiredis")
    internal(module, "NOT_ENOUGH_DATA", CHECK)
    internal(module, "_AsyncHiredisParser", REPLIES)
    assert redis.utils.HIREDIS_AVAILABLE, f"hiredis is not installed; {CHECK} needs its parser"


async def test_connection_internals_are_where_mux_and_check_use_them() -> None:
    from redis._parsers.hiredis import NOT_ENOUGH_DATA

    pool = ConnectionPool.from_url(TEST_REDIS_URL, connection_class=BufferCheckConnection)
    conn = await pool.get_connection()  # without a command name, as the mux takes it
    try:
        writer = internal(conn, "_writer", MUX)
        assert isinstance(writer, asyncio.StreamWriter), f"{MUX}: _writer is {writer!r}"
        parser = internal(conn, "_parser", CHECK)
        from redis._parsers.hiredis import _AsyncHiredisParser  # pyright: ignore[reportPrivateUsage]

        assert type(parser) is _AsyncHiredisParser, f"{REPLIES}: the parser is {parser!r}"
        assert internal(conn, "protocol", REPLIES) in (2, "2"), f"{REPLIES}: not RESP2"
        reader = internal(parser, "_reader", CHECK)
        assert reader.gets() is NOT_ENOUGH_DATA, f"{CHECK}: hiredis reader's gets() changed"
        stream = internal(parser, "_stream", CHECK)
        assert isinstance(stream, asyncio.StreamReader), f"{CHECK}: _stream is {stream!r}"
        assert internal(parser, "_connected", CHECK) is True
        assert not internal(stream, "_buffer", CHECK)

        # What the mux does: write a packed command to the writer, read the reply back;
        # meanwhile the reply waits, unread, in the stream reader's buffer.
        writer.writelines(conn.pack_command("PING"))
        for _ in range(200):
            if internal(stream, "_buffer", CHECK):
                break
            await asyncio.sleep(0.01)
        assert bytes(internal(stream, "_buffer", CHECK)) == b"+PONG\r\n", (
            f"{CHECK}: an unread reply is no longer in asyncio.StreamReader._buffer"
        )
        assert await conn.read_response() == b"PONG"

        await conn.disconnect(nowait=True)  # how the mux drops a broken connection
        assert internal(parser, "_connected", CHECK) is False
    finally:
        await pool.release(conn)
        await pool.aclose()
