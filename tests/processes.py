"""Start agentbus processes for integration and end-to-end tests."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

from tests import warm_cli
from tests.conftest import TEST_REDIS_URL
from tests.sqlite_template import migrated_sqlite

AGENTBUS = str(Path(sys.executable).with_name("agentbus"))


async def process_env(tmp_path: Path, **settings: str) -> dict[str, str]:
    """The environment of agentbus processes a test starts: the test Redis, a migrated
    SQLite store and a data folder under ``tmp_path``, then ``settings``
    (``AGENTBUS_...`` names)."""
    db = await migrated_sqlite(tmp_path / "store.db")
    base = {
        "AGENTBUS_REDIS_URL": TEST_REDIS_URL,
        "AGENTBUS_DATABASE_URL": db,
        "AGENTBUS_DATA_DIR": str(tmp_path / "data"),
    }
    return base | settings


def free_port() -> int:
    """A TCP port free on loopback now (for a process the test starts)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spawn(
    args: list[str], env: dict[str, str], log: Path, program: str = AGENTBUS
) -> subprocess.Popen[bytes]:
    """Start ``agentbus ARGS`` (this build's, or ``program``) with extra environment,
    output to ``log``.

    This build's is forked from a process that has its libraries imported
    (`tests.warm_cli`): a process of its own that signals, ``wait`` and ``poll`` treat as
    any other, seconds sooner.
    """
    full_env = {**os.environ, **env}
    if program == AGENTBUS:
        return warm_cli.spawn(args, full_env, log)
    with log.open("ab") as out:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            [program, *args],
            env=full_env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )


@contextmanager
def processes() -> Generator[list[subprocess.Popen[bytes]], None, None]:
    """A list to put processes in; whatever is still alive at the end is killed."""
    procs: list[subprocess.Popen[bytes]] = []
    try:
        yield procs
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                p.wait(10)


async def cli(args: list[str], env: dict[str, str], program: str = AGENTBUS) -> str:
    """Run ``agentbus ARGS`` (this build's, or ``program``) to completion; returns stdout,
    fails on a non-zero exit.

    This build's runs forked from a process that has its libraries imported
    (`tests.warm_cli`): a process of its own, seconds sooner.
    """
    if program == AGENTBUS:
        done = await warm_cli.run(args, {**os.environ, **env})
        assert done.returncode == 0, f"agentbus {' '.join(args)} failed: {done.stderr}"
        return done.stdout
    proc = await asyncio.create_subprocess_exec(
        program,
        *args,
        env={**os.environ, **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode == 0, f"agentbus {' '.join(args)} failed: {err.decode()}"
    return out.decode()
