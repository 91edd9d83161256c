"""The mux's command packer writes what redis-py's would."""

from __future__ import annotations

from typing import Any

import pytest
from redis.asyncio.connection import Connection

from bus.keys import Role
from bus.redis_io.mux import pack

CASES: list[tuple[Any, ...]] = [
    ("PING",),
    ("ECHO", "héllo"),
    ("EVALSHA", "ab12", 2, "ab:{0}:k1", b"ab:{0}:k2", 0, -7, "x" * 7000, "y" * 10),
    ("SET", "k", memoryview(b"abc")),
    ("INCRBYFLOAT", "k", 1.5),
    ("XACK", Role.PLANNER, "g", b"1-0"),
    ("SET", "k", 2**70, 1e20, float("inf")),
]


@pytest.mark.parametrize("args", CASES)
def test_pack_matches_redis_py(args: tuple[Any, ...]) -> None:
    assert pack(args) == b"".join(Connection().pack_command(*args))


def test_pack_refuses_what_redis_py_refuses() -> None:
    # hiredis refuses these too; the Python loop then raises with its own message.
    with pytest.raises(TypeError):
        pack(("SET", "k", True))
    with pytest.raises(TypeError):
        pack(("SET", "k", None))
