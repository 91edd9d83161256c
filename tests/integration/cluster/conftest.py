"""A real local Redis Cluster for the session (three masters, one replica each).

The cluster is started once from the machine's ``redis-server`` on the ports from
``AGENTBUS_TEST_CLUSTER_PORT`` (default 7101..7106; each xdist worker ten ports higher than
the last) and stopped at the session's end. Every
test gets it empty, and every client a test opens is closed (with its node connections)
before the test ends.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator

import pytest
from redis.asyncio import Redis

from agentbus_bench.local_cluster import BASE_PORT, LocalCluster
from bus.cluster import close_cluster, open_cluster
from bus.redis_io.shared_mux import close_mux
from tests.workers import worker_port


def _port_in_use(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="session")
def local_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """The session's cluster; every node process is stopped at the end."""
    cluster = LocalCluster(tmp_path_factory.mktemp("cluster"), base_port=worker_port(BASE_PORT))
    busy = [p for p in cluster.ports if _port_in_use(p) or _port_in_use(p + 10_000)]
    if busy:
        pytest.fail(
            f"ports {busy} (or +10000, the cluster bus) are taken; set "
            f"AGENTBUS_TEST_CLUSTER_PORT to a free base (now {BASE_PORT}) for the cluster tests",
            pytrace=False,
        )
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def cluster(local_cluster: LocalCluster) -> LocalCluster:
    """The session's cluster, healthy and empty."""
    local_cluster.wait_ok()
    local_cluster.flush()
    return local_cluster


@pytest.fixture
async def redis(cluster: LocalCluster) -> AsyncIterator[Redis]:
    """A cluster client (typed as the `Redis` the runtime takes), closed after the test."""
    client = open_cluster(cluster.url)
    await client.initialize()
    try:
        yield client
    finally:
        await close_mux(client)
        await close_cluster(client)
