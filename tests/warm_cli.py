"""``agentbus`` commands in processes forked from one that has the libraries imported.

A command started the ordinary way spends seconds importing SQLAlchemy, FastAPI,
FastStream, qdrant-client and MCP before it does anything; the tests run hundreds of
commands. Here a fork server (`multiprocessing`'s ``forkserver``) imports those libraries
once per test process, and each command runs in a process forked from it: a process of its
own (its environment, working folder, output and exit status), as the installed
``agentbus`` script runs it (``sys.exit(app())``), that only imports agentbus itself.

Only third-party libraries are imported ahead: agentbus's own modules may read the
environment when imported (``api.compose.faults``), and each command has its own.
"""

from __future__ import annotations

import asyncio
import atexit
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

#: What every command imports, or most: the libraries that take seconds. None of them reads
#: an ``AGENTBUS_*`` variable when imported.
PRELOAD = [
    "pydantic",
    "pydantic_settings",
    "structlog",
    "typer",
    "httpx",
    "redis.asyncio",
    "sqlalchemy",
    "sqlalchemy.ext.asyncio",
    "alembic",
    "faststream.redis",
    "fastapi",
    "qdrant_client",
    "mcp",
    "ag_ui.core",
    "ag_ui.encoder",
    "a2a.types",
    "simplemma",
    "jsonschema",
    "yaml",
    "prometheus_client",
]

_context = multiprocessing.get_context("forkserver")
_context.set_forkserver_preload(PRELOAD)


@dataclass(frozen=True, slots=True)
class Finished:
    """How a command ended: its exit status and what it printed."""

    returncode: int
    stdout: str
    stderr: str


def _command(args: list[str], env: dict[str, str], cwd: str, out: str, err: str) -> None:
    """The forked process: the environment, folder and output of a command, then the script."""
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    stdout = os.open(out, os.O_WRONLY | os.O_APPEND)
    os.dup2(stdout, 1)
    os.dup2(stdout if err == out else os.open(err, os.O_WRONLY | os.O_APPEND), 2)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)  # what a process it starts inherits, too
    sys.stdin = open(os.devnull)  # noqa: SIM115 (the process's own, until it exits)
    sys.argv = ["agentbus", *args]
    from api.cli.main import app

    try:
        sys.exit(app())
    finally:
        # This process ends in os._exit (multiprocessing's): run what an exit runs first,
        # e.g. a tracer's flush.
        atexit._run_exitfuncs()  # pyright: ignore[reportPrivateUsage]
        sys.stdout.flush()
        sys.stderr.flush()


class _Started:
    """A command's process, started, and the files its output goes to."""

    def __init__(self, args: list[str], env: dict[str, str], merged: bool) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="agentbus-cli-"))
        self.out = self.folder / "stdout"
        self.err = self.out if merged else self.folder / "stderr"
        self.out.touch()
        self.err.touch()
        self.process = _context.Process(
            target=_command, args=(args, env, os.getcwd(), str(self.out), str(self.err))
        )
        self.process.start()  # the first waits for the fork server's imports

    def wait(self) -> None:
        """Until the process ends."""
        self.process.join()

    def finish(self) -> Finished:
        """How it ended (killed first if it still runs); its files are removed."""
        try:
            if self.process.is_alive():  # the test was cancelled, or timed out
                self.process.kill()
                self.process.join(10)
            code = self.process.exitcode
            return Finished(
                code if code is not None else -9,
                self.out.read_text(errors="replace"),
                self.err.read_text(errors="replace"),
            )
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


async def run(args: list[str], env: dict[str, str], *, merged: bool = False) -> Finished:
    """Run ``agentbus ARGS`` with ``env`` (the whole environment) to its end; ``merged``: its
    errors go to its output (``stderr`` is then the output too)."""
    started = await asyncio.to_thread(_Started, args, env, merged)
    try:
        await asyncio.to_thread(started.wait)
    finally:
        done = await asyncio.to_thread(started.finish)
    return done


class Spawned(subprocess.Popen[bytes]):
    """A long-running ``agentbus`` process forked warm, seen as the ``Popen`` of one started
    the ordinary way: its pid, ``poll``, ``wait``, ``send_signal`` (``kill``, ``terminate``)
    and ``returncode`` (``-N`` when signal N ended it)."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        # No ``super().__init__()``: that would exec a program; this process is forked.
        log.touch()
        self._process = _context.Process(
            target=_command, args=(args, env, os.getcwd(), str(log), str(log)), daemon=True
        )
        self._process.start()
        self.args = ["agentbus", *args]
        self.pid = self._process.pid or 0
        self.returncode = None
        self.stdin = self.stdout = self.stderr = None
        self._child_created = False  # nothing for Popen's finalizer to reap

    def poll(self) -> int | None:
        """Its exit status, or None while it runs."""
        if self.returncode is None:
            self.returncode = self._process.exitcode
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Its exit status once it ended.

        Raises:
            subprocess.TimeoutExpired: it still runs after ``timeout`` seconds.
        """
        self._process.join(timeout)
        code = self.poll()
        if code is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return code

    def send_signal(self, sig: int) -> None:
        """Signal it, unless it has ended."""
        if self.poll() is None:
            os.kill(self.pid, sig)


def spawn(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """Start ``agentbus ARGS`` with ``env`` (the whole environment), its output and errors
    appended to ``log``; it runs until it exits or is signalled."""
    return Spawned(args, env, log)
