"""A whole agentbus to fuzz: ``agentbus api`` and one worker process of every run role,
on the test Redis and a migrated SQLite store, with the scripted model.

The fuzzers share one (a session fixture, ``tests/fuzz/conftest.py``) and check at the end
that none of its processes died.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from redis import Redis

from api.compose.roles import RUN_ROLES
from bus.keys import Role
from tests.conftest import TEST_REDIS_URL
from tests.processes import AGENTBUS, free_port, process_env, processes, spawn

#: How long each schemathesis run lasts, per key (seconds); ``make fuzz`` raises it.
FUZZ_SECONDS = float(os.environ.get("AGENTBUS_FUZZ_SECONDS", "25"))
#: Examples per hypothesis fuzzer (frames, questions); ``make fuzz`` raises it.
FUZZ_EXAMPLES = int(os.environ.get("AGENTBUS_FUZZ_EXAMPLES", "40"))


@dataclass
class System:
    """The running system: its address, its keys by who holds them, its processes."""

    base_url: str
    env: dict[str, str]
    keys: dict[str, str] = field(default_factory=dict[str, str])
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list[subprocess.Popen[bytes]])
    logs: Path = Path()

    def key(self, tenant: str, subject: str, role: str = "user") -> str:
        """A new key. The admin's fuzzing erases users it finds (alice and root among
        them), so a fuzzer that runs after it asks for a key of its own."""
        return _key(self.env, tenant, subject, role)

    def dead(self) -> list[str]:
        """What died: each process that exited, with its exit code and its log's tail."""
        out: list[str] = []
        for proc in self.procs:
            if proc.poll() is not None:
                out.append(f"{proc.args!r} exited {proc.returncode}")
        if out:
            tails = [p.read_text()[-2000:] for p in self.logs.glob("*.log")]
            out.extend(tails)
        return out


def _key(env: dict[str, str], tenant: str, subject: str, role: str) -> str:
    args = ["keys", "create", "--tenant", tenant, "--subject", subject, "--role", role]
    done = subprocess.run(
        [AGENTBUS, *args], env={**os.environ, **env}, capture_output=True, check=True, timeout=120
    )
    return done.stdout.decode().strip().splitlines()[-1]


def _wait_ready(base_url: str, within: float) -> None:
    until = time.monotonic() + within
    while time.monotonic() < until:
        try:
            if httpx.get(f"{base_url}/readyz", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    raise AssertionError(f"the API at {base_url} did not become ready in {within} s")


@contextmanager
def running_system(tmp: Path) -> Generator[System, None, None]:
    """Start the system in ``tmp`` (the test Redis is flushed first); stop it after."""
    redis = Redis.from_url(TEST_REDIS_URL)
    try:
        redis.flushdb()
    finally:
        redis.close()
    env = asyncio.run(
        process_env(
            tmp,
            AGENTBUS_LLM="scripted",
            AGENTBUS_EMBEDDER="hashing",
            AGENTBUS_READ_BLOCK_MS="100",
        )
    )
    port = free_port()
    roles = [str(r) for r in (*RUN_ROLES, Role.RECORDER)]
    with processes() as procs:
        procs.append(spawn(["worker", *roles], env, tmp / "workers.log"))
        procs.append(spawn(["api", "--port", str(port)], env, tmp / "api.log"))
        system = System(f"http://127.0.0.1:{port}", env, procs=procs, logs=tmp)
        system.keys = {
            "user": _key(env, "t1", "alice", "user"),
            "admin": _key(env, "t1", "root", "admin"),
            "other_tenant": _key(env, "t2", "bob", "user"),
        }
        _wait_ready(system.base_url, within=120)
        yield system
