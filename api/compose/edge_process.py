"""The API process of ``agentbus up``: the edge gets a core of its own.

Served from the workers' process, every websocket frame and every POST waited behind
worker steps on one event loop: with 200 clients streaming, an event took 12-15 ms from
its XADD to the client, against 4-6 ms from an ``agentbus api`` process beside the workers
(``agentbus bench relay --clients 200``, same host, same run). So ``up`` starts
``agentbus api`` as a child on the same Redis and store; it dies with ``up``, even by
SIGKILL, and is told to stop (draining its connections) as soon as ``up`` gets SIGTERM or
SIGINT, before the workers drain (:func:`stop_edge`).
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

import httpx

from bus.embedded import die_with_parent

READY_TIMEOUT_S = 120.0


class EdgeFailed(RuntimeError):
    """The API process exited or did not become ready."""


def free_port(host: str) -> int:
    """A port the OS says is free now (for ``AGENTBUS_API_PORT=0``)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _probe_host(host: str) -> str:
    return "127.0.0.1" if host in ("0.0.0.0", "", "::") else host


@contextmanager
def edge_process(redis_url: str, host: str, port: int) -> Generator[subprocess.Popen[bytes]]:
    """Run ``agentbus api`` on ``host:port`` against ``redis_url``; SIGTERM it on exit."""
    agentbus = str(Path(sys.executable).with_name("agentbus"))
    # The /metrics port of the machine is the parent's; the API serves its own /metrics.
    env = {k: v for k, v in os.environ.items() if k != "AGENTBUS_METRICS_PORT"}
    env.update(AGENTBUS_REDIS_URL=redis_url, AGENTBUS_API_HOST=host, AGENTBUS_API_PORT=str(port))
    proc = subprocess.Popen([agentbus, "api"], env=env, preexec_fn=die_with_parent)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def stop_edge(proc: subprocess.Popen[bytes], stopping: asyncio.Event) -> None:
    """Tell the API process to stop now (SIGTERM: it drains its connections and exits).

    ``stopping`` is set first, so :func:`watch` does not take the exit for a crash.
    """
    stopping.set()
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)


async def wait_ready(proc: subprocess.Popen[bytes], host: str, port: int) -> None:
    """Return once the API answers ``/readyz``; raise :class:`EdgeFailed` if it died."""
    url = f"http://{_probe_host(host)}:{port}/readyz"
    deadline = time.monotonic() + READY_TIMEOUT_S
    async with httpx.AsyncClient(timeout=2.0) as client:
        while True:
            if proc.poll() is not None:
                raise EdgeFailed(f"the API process exited with code {proc.returncode}")
            try:
                if (await client.get(url)).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise EdgeFailed(f"the API did not answer {url} within {READY_TIMEOUT_S:.0f} s")
            await asyncio.sleep(0.1)


async def watch(proc: subprocess.Popen[bytes], stop: asyncio.Event) -> int | None:
    """Wait until ``stop`` is set or the API process exits; its exit code, if it did."""
    while not stop.is_set():
        if proc.poll() is not None:
            return proc.returncode
        try:
            await asyncio.wait_for(stop.wait(), 0.5)
        except TimeoutError:
            continue
    return None
