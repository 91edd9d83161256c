"""`agentbus bench hop --redis-cluster` on the session's cluster, with a second process.

Tiny run counts: only that the flags reach the bench and its worker process, not speed.
"""

from __future__ import annotations

import json

import pytest
from redis.asyncio import Redis

from agentbus_bench.local_cluster import LocalCluster
from bus.cluster import stream_read_keys
from bus.keys import Role, role_stream
from bus.settings import CLUSTER_SHARDS
from tests.processes import cli


async def test_hop_runs_on_the_cluster_over_its_shards(cluster: LocalCluster, redis: Redis) -> None:
    out = await cli(
        [
            "bench",
            "hop",
            "--redis-cluster",
            "--redis-url",
            cluster.url,
            "--hops",
            "2",
            "--latency-runs",
            "1",
            "--runs",
            "32",
            "--processes",
            "2",
            "--json",
        ],
        {},
    )
    figures = json.loads(out.strip().splitlines()[-1])
    assert figures["redis"] == "cluster" and figures["processes"] == 2
    used = [s for s in range(CLUSTER_SHARDS) if await redis.exists(role_stream(Role.NOOP, s))]
    assert len(used) > 1  # runs spread over the shards, not all on shard 0


@pytest.mark.parametrize(
    ("args", "keys"),
    [
        (("STREAMS", "a", "0-0"), ["a"]),
        (("COUNT", 5, "BLOCK", 100, "STREAMS", b"a", b"b", "0-0", "$"), [b"a", b"b"]),
        (("GROUP", "g", "c", "COUNT", 1, "NOACK", "streams", "k", ">"), ["k"]),
        (("GROUP", "streams", "c", "STREAMS", "k", ">"), ["k"]),  # a group named "streams"
        (("STREAMS", "a", "b", "0-0"), None),  # odd: not a read this parser understands
        (("FOO", "STREAMS", "a", "0-0"), None),
        ((), None),
    ],
)
def test_stream_read_keys(args: tuple[object, ...], keys: list[object] | None) -> None:
    assert stream_read_keys(args) == keys
