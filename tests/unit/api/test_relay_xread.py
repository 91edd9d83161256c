"""The relay's pre-packed XREAD: byte-identical to redis-py's packing, both reply shapes."""

from __future__ import annotations

from redis.asyncio import Redis
from redis.asyncio.connection import Connection

from api.streams.relay_xread import PackedXread, parse, supports


def test_the_command_is_what_redis_py_would_send() -> None:
    read = PackedXread(Redis(), count=512, block_ms=5_000)
    streams = {"agentbus:{s0}:wake": "0-0", "agentbus:{s0}:run:ä:events": "1764-3"}
    for _ in range(2):  # the second time from the cached names
        expected = Connection().pack_command(
            "XREAD", "COUNT", 512, "BLOCK", 5_000, "STREAMS", *streams, *streams.values()
        )
        assert read.pack(streams) == b"".join(expected)


def test_names_of_streams_no_longer_read_are_forgotten() -> None:
    read = PackedXread(Redis(), count=1, block_ms=1)
    read.pack({f"s{i}": "0-0" for i in range(200)})
    read.pack({"s1": "0-0"})
    assert read.pack({"s1": "0-0"}).count(b"s") == 1
    assert len(read._names) == 1  # pyright: ignore[reportPrivateUsage]


def test_resp2_and_resp3_replies_parse_alike() -> None:
    resp2 = [[b"s", [[b"1-0", [b"data", b"{}", b"x", b"y"]], [b"2-0", None]]]]
    resp3 = {b"s": [[b"1-0", [b"data", b"{}", b"x", b"y"]], [b"2-0", None]]}
    want = [(b"s", [(b"1-0", {b"data": b"{}", b"x": b"y"}), (b"2-0", {})])]
    assert parse(resp2) == want
    assert parse(resp3) == want
    assert parse(None) == []


def test_only_a_single_node_client_is_read_this_way() -> None:
    assert supports(Redis())
    assert not supports(object())
