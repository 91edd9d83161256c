"""Where a benchmark's system runs: the embedded defaults, or a given Redis, Redis Cluster
and database (``--redis-url``, ``--redis-cluster``, ``--database-url``).

``--redis-cluster`` without ``--redis-url`` starts a temporary three-master cluster from the
machine's ``redis-server`` (the cluster tests' harness) on ``--cluster-port``..+2.
The benchmark starts ``agentbus up`` against the chosen parts; ``up`` migrates the database.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path

from redis.asyncio import Redis

from bus.broker import resolve_redis_url
from bus.cluster import close_cluster, open_cluster
from bus.settings import BusSettings
from bus.typed_redis import from_url

DEFAULT_CLUSTER_PORT = 7101


@dataclass(frozen=True)
class Deployment:
    """The parts a benchmark runs on; unset parts are the embedded defaults."""

    redis_url: str | None = None
    redis_cluster: bool = False
    database_url: str | None = None
    cluster_port: int | None = None

    def problem(self) -> str | None:
        """Why this combination can't run (None: it can)."""
        url = self.redis_url
        if url is not None and not url.startswith(("redis://", "rediss://", "unix://")):
            return f"--redis-url {url!r}: expected redis://, rediss:// or unix://"
        if self.redis_cluster and url is not None and url.startswith("unix://"):
            return "--redis-cluster needs a TCP node: --redis-url redis://HOST:PORT"
        if self.cluster_port is not None and not self.redis_cluster:
            return "--cluster-port is the temporary cluster's: it needs --redis-cluster"
        if self.cluster_port is not None and url is not None:
            return "--cluster-port starts a temporary cluster; with --redis-url drop it"
        db = self.database_url
        if db is not None and not db.startswith(("postgresql+asyncpg://", "sqlite+aiosqlite://")):
            return (
                f"--database-url {db.split('://')[0]}://...: expected postgresql+asyncpg://"
                "USER@HOST/DB or sqlite+aiosqlite:///PATH"
            )
        return None

    def describe(self, *, store: bool = True) -> str:
        """A short label: which Redis (and which store, with ``store``)."""
        redis = "cluster" if self.redis_cluster else ("redis" if self.redis_url else "embedded")
        if not store:
            return redis
        store_name = "sqlite"
        if self.database_url and self.database_url.startswith("postgresql"):
            store_name = "postgres"
        return f"{redis}+{store_name}"

    @contextlib.contextmanager
    def started(self, data: Path) -> Generator[Deployment, None, None]:
        """This deployment with a Redis URL filled in (a temporary cluster started if asked),
        for ``data`` as the data folder."""
        if not self.redis_cluster or self.redis_url is not None:
            yield self
            return
        from agentbus_bench.local_cluster import LocalCluster

        cluster = LocalCluster(
            data / "cluster", base_port=self.cluster_port or DEFAULT_CLUSTER_PORT, replicas=0
        )
        busy = [p for p in cluster.ports if _in_use(p) or _in_use(p + 10_000)]
        if busy:
            raise SystemExit(f"ports {busy} (or +10000) are taken: pick another --cluster-port")
        try:
            cluster.start()
            yield Deployment(cluster.url, True, self.database_url)
        finally:
            cluster.stop()

    def env(self, data: Path) -> dict[str, str]:
        """``AGENTBUS_*`` for the processes the benchmark starts (any others dropped)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTBUS_")}
        env["AGENTBUS_DATA_DIR"] = str(data)
        if self.redis_url:
            env["AGENTBUS_REDIS_URL"] = self.redis_url
        if self.redis_cluster:
            env["AGENTBUS_REDIS_CLUSTER"] = "true"
        if self.database_url:
            env["AGENTBUS_DATABASE_URL"] = self.database_url
        return env

    def settings(self, data: Path) -> BusSettings:
        """The bus settings the benchmark's own client uses (the same shards as ``up``)."""
        return BusSettings(
            data_dir=data,
            redis_url=self.redis_url,
            redis_cluster=self.redis_cluster,
            database_url=self.database_url,
        )


def _in_use(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


async def open_client(settings: BusSettings) -> Redis:
    """A client of the deployment's Redis (a cluster client on a cluster)."""
    url = resolve_redis_url(settings)
    if not settings.redis_cluster:
        return from_url(url)
    client = open_cluster(url)
    await client.initialize()  # pyright: ignore[reportAttributeAccessIssue]
    return client


async def close_client(client: Redis) -> None:
    """Close a client of `open_client`."""
    await client.aclose()
    await close_cluster(client)  # a no-op on a plain client


def wait_for_up(
    up: subprocess.Popen[bytes], log: Path, within: float = 120, offset: int = 0
) -> None:
    """Wait until ``agentbus up`` (stdout to ``log`` from byte ``offset``) says its workers
    and its API process serve (the API's start-up is not the benchmark's); exit with its
    output if they do not."""
    deadline = time.monotonic() + within
    while not all(line in log.read_bytes()[offset:] for line in (b"agentbus up:", b"api: ")):
        if up.poll() is not None or time.monotonic() > deadline:
            tail = log.read_bytes()[offset:].decode(errors="replace")[-2000:]
            raise SystemExit(f"agentbus up did not start:\n{tail}")
        time.sleep(0.1)


def _family(root: int) -> list[int]:
    """``root`` and its descendants."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
    family, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, ppid in parents.items() if ppid in frontier]
        family.extend(frontier)
    return family


def _by_label(root: int, read: Callable[[int], float]) -> dict[str, float]:
    """``read(pid)`` of the processes `agentbus up` (``root``) and the benchmark started,
    by name (``up``, ``worker``, ``worker-2``, ``api``, ``redis-server``, ...)."""
    found: dict[str, float] = {}
    for pid in _family(os.getpid())[1:]:
        with contextlib.suppress(OSError, StopIteration):
            name = _label(pid, root)
            value = read(pid)
            label, n = name, 2
            while label in found:
                label, n = f"{name}-{n}", n + 1
            found[label] = value
    return found


def _hwm_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    hwm = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
    return round(int(hwm.split()[1]) / 1024, 1)


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def peak_rss_mb(root: int) -> dict[str, float]:
    """Peak RSS (VmHWM, MB) of each process `agentbus up` (``root``) and the benchmark
    started (a temporary cluster's nodes included)."""
    return _by_label(root, _hwm_mb)


def cpu_seconds(root: int) -> dict[str, float]:
    """CPU seconds (user + system) used so far by each process, as in `peak_rss_mb`."""
    return _by_label(root, _cpu_s)


def _label(pid: int, root: int) -> str:
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    words = [a.decode(errors="replace") for a in argv if a][:3]
    if not words:
        raise OSError(f"process {pid} has exited")
    if pid == root:
        return "up"
    if words and "redis-server" in words[0]:  # it rewrites its title: "redis-server ADDR"
        return "redis-server"
    for known in ("worker", "api"):
        if known in words[1:]:
            return known
    return Path(words[0]).name if words else str(pid)


def temporary_data() -> tempfile.TemporaryDirectory[str]:
    """A temporary data folder (SQLite store, embedded Redis, logs)."""
    return tempfile.TemporaryDirectory(prefix="agentbus-bench-")
