"""Backup and restore of the embedded Redis through its own persistence.

A backup asks the server for a fresh RDB (``BGSAVE``: a forked child writes a
point-in-time image while the server keeps serving) and copies that file. A restore puts
the image in place of the append-only file: Redis reads an AOF that starts with an RDB
image (the "RDB preamble" its own rewrites write), so the restored server starts from the
image and appends to it from then on.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any, Protocol, cast

import redis

from bus.embedded import SOCKET_NAME, EmbeddedRedis, is_running
from bus.errors import RedisUnavailable

#: The file the embedded server replays on start (``--appendonly yes`` in its folder).
AOF_NAME = "appendonly.aof"
_RDB_MAGIC = b"REDIS"


class _Client(Protocol):
    """The sync client's commands used here, with the replies Redis sends (redis-py
    annotates each as ``T | Awaitable[T]``)."""

    def info(self, section: str) -> dict[str, Any]: ...
    def config_get(self, pattern: str) -> dict[str, Any]: ...
    def dbsize(self) -> int: ...
    def execute_command(self, *args: str) -> Any: ...
    def close(self) -> None: ...


def _client(data_dir: Path) -> _Client:
    sock = data_dir / "redis" / SOCKET_NAME
    return cast("_Client", redis.Redis(unix_socket_path=str(sock), socket_timeout=30))


def _info(client: _Client) -> dict[str, Any]:
    return client.info("persistence")


def _bgsave(client: _Client, timeout_s: float) -> None:
    """Start a BGSAVE (once no other child, a save or an AOF rewrite, runs) and wait for it."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            client.execute_command("BGSAVE")
            break  # "Background saving started": our child forked, as of now
        except redis.ResponseError as e:
            busy = "in progress" in str(e) or "child process is active" in str(e)
            if not busy or time.monotonic() > deadline:
                raise RedisUnavailable(f"the embedded Redis refused BGSAVE: {e}") from e
            time.sleep(0.05)  # another save or an AOF rewrite runs: ours starts after it
    while time.monotonic() < deadline:
        info = _info(client)
        if not int(info["rdb_bgsave_in_progress"]):
            if info["rdb_last_bgsave_status"] != "ok":
                raise RedisUnavailable(
                    "the embedded Redis failed to write its RDB",
                    hint="see redis.log in the data folder's redis/ (disk full?)",
                )
            return
        time.sleep(0.05)
    raise RedisUnavailable(f"the embedded Redis did not finish BGSAVE in {timeout_s:g} s")


def save_rdb(data_dir: Path, dest: Path, *, timeout_s: float = 300.0) -> str:
    """Write a point-in-time RDB image of the data folder's embedded Redis to ``dest``.

    A running server (``agentbus up``) keeps serving while it saves; when none runs, one is
    started on the folder's AOF for the save and stopped after it. Returns the server's
    version.

    Raises:
        RedisUnavailable: the server could not be started or could not save.
    """
    server: EmbeddedRedis | None = None
    if not is_running(data_dir):
        server = EmbeddedRedis(data_dir)
        server.start()
    try:
        client = _client(data_dir)
        try:
            version = str(client.info("server")["redis_version"])
            _bgsave(client, timeout_s)
            folder, name = _config(client, "dir"), _config(client, "dbfilename")
        finally:
            client.close()
        # Redis writes a temporary file and renames it: an open handle keeps reading this
        # image even if another save replaces the file meanwhile.
        with (Path(folder) / name).open("rb") as src, dest.open("wb") as out:
            shutil.copyfileobj(src, out)
    except redis.RedisError as e:
        raise RedisUnavailable(f"the embedded Redis failed during a backup: {e}") from e
    finally:
        if server is not None:
            server.stop()
    return version


def _config(client: _Client, name: str) -> str:
    value = client.config_get(name)[name]
    return value.decode() if isinstance(value, bytes) else str(value)


def is_rdb(path: Path) -> bool:
    """True when ``path`` starts like an RDB image."""
    with path.open("rb") as f:
        return f.read(len(_RDB_MAGIC)) == _RDB_MAGIC


def place_rdb(rdb: Path, data_dir: Path) -> int:
    """Make ``rdb`` the embedded Redis's data (its folder must hold no other data yet),
    start the server on it once to check it loads, and return the keys it holds.

    Raises:
        RedisUnavailable: the image does not load.
    """
    folder = data_dir / "redis"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(rdb, folder / AOF_NAME)
    with EmbeddedRedis(data_dir):
        client = _client(data_dir)
        try:
            keys = client.dbsize()
        finally:
            client.close()
    return keys
