"""A consistent copy of the embedded vector store (Qdrant Edge), for ``agentbus backup``.

Edge restores snapshots a Qdrant server made but cannot make one itself, so a copy is taken
the way the index builder takes one (`retrieval.edge_index`): on the store's own thread,
which every write, rebuild and swap goes through, the shard is flushed and its live
generation copied; writes wait for the copy (a few hundred milliseconds per 10,000 chunks)
and nothing is half in it.

The store belongs to the process that holds its lock. When no process holds it, the backup
opens the store itself (`copy_unowned`). When one does (``agentbus up``, or a worker of the
retrieval role), the backup asks it over the bus (`RemoteSnapshot`): a `SnapshotTask` on the
retrieval stream, answered by `make_snapshot_handler` with a copy in the store's own
``.snapshots/NAME`` folder (the message names no path) and a reply on a stream under the
request's keys, like a remote search (`retrieval.remote`).
"""

from __future__ import annotations

import asyncio
import secrets
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

from bus import keys, wire
from bus.commands import Command, SnapshotTask
from bus.publish import publish
from bus.runtime.context import StepContext, StepResult
from bus.runtime.groups import ensure_group
from retrieval.edge_store import EdgeStore
from retrieval.errors import RetrievalError, SearchUnanswered, StoreLocked

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from bus.runtime.worker import Handler
    from bus.settings import BusSettings
    from retrieval.ports import VectorStore

#: Under the store's folder: where its owner writes the copies it is asked for.
SNAPSHOTS = ".snapshots"


class SnapshotUnsupported(RetrievalError):
    """The store that answered is not the embedded one (a Qdrant server has its own)."""

    code = "snapshot_unsupported"
    hint = "back up a Qdrant server with its snapshots (docs/backup.md)"


class SnapshotReply(BaseModel):
    """What the store's owner answers: the points copied, or the error that stopped it."""

    model_config = ConfigDict(frozen=True)

    status: Literal["ok", "error"]
    code: str = ""
    message: str = ""
    points: int = 0


#: A copy still in ``.snapshots`` after this long was never collected (its backup gave up
#: waiting); the next copy removes it.
STALE_S = 3600.0


def staging(root: Path, name: str) -> Path:
    """Where the owner of the store at ``root`` puts the copy called ``name``."""
    return root / SNAPSHOTS / name


def _clear(target: Path) -> None:
    """Remove copies left too long beside ``target``, and ``target`` itself (a redelivered
    request copies again, whole)."""
    if target.parent.is_dir():
        cutoff = time.time() - STALE_S
        for old in target.parent.iterdir():
            if old.stat().st_mtime < cutoff:
                shutil.rmtree(old, ignore_errors=True)
    shutil.rmtree(target, ignore_errors=True)


async def copy_store(store: EdgeStore, target: Path) -> int:
    """Copy ``store``'s collection into ``target`` (new) between two writes; its points."""
    return await store.run(store.copy_live, target)


async def copy_unowned(root: Path, collection: str, target: Path) -> int | None:
    """Open the store at ``root`` (no process holds it) and copy it to ``target``.

    Returns the points copied, or None when another process holds the store.
    """
    try:
        store = await EdgeStore.open(root, collection)
    except StoreLocked:
        return None
    try:
        return await copy_store(store, target)
    finally:
        await store.aclose()


def reply_key(command: Command) -> str:
    """The stream a snapshot command's reply is written to."""
    return keys.run_blob(command.run_id, command.shard, "snapshot")


def make_snapshot_handler(store: VectorStore) -> Handler:
    """The retrieval role's handler for `SnapshotTask` commands (the store's owner)."""

    async def handle(ctx: StepContext, command: Command) -> StepResult:
        task = command.payload
        if not isinstance(task, SnapshotTask):
            raise TypeError(f"snapshot got a {task.kind} payload")
        if not isinstance(store, EdgeStore):
            err = SnapshotUnsupported("this process's vector store is a Qdrant server")
            reply = SnapshotReply(status="error", code=err.code, message=str(err))
        else:
            target = staging(store.folder.parent, task.name)
            await asyncio.to_thread(_clear, target)
            try:
                reply = SnapshotReply(status="ok", points=await copy_store(store, target))
            except OSError as e:
                await asyncio.to_thread(shutil.rmtree, target, True)
                reply = SnapshotReply(status="error", code="snapshot_failed", message=str(e))
        key = reply_key(command)
        async with ctx.redis.pipeline(transaction=False) as pipe:
            pipe.xadd(key, {wire.DATA_FIELD: reply.model_dump_json()})
            pipe.expire(key, ctx.settings.run_ttl_s)
            await pipe.execute()
        return StepResult()

    return handle


class RemoteSnapshot:
    """Asks the process that owns the embedded store for a copy, over the bus.

    Args:
        redis: the broker.
        settings: shard count and stream length.
        tenant: the tenant the request is published as (the CLI's).
        subject: the subject the request is published as.
    """

    def __init__(self, redis: Redis, settings: BusSettings, tenant: str, subject: str) -> None:
        self._redis = redis
        self._settings = settings
        self._tenant = tenant
        self._subject = subject

    async def copy(self, root: Path, target: Path, *, wait_s: float) -> int:
        """Have the owner copy the store (its folder is ``root``) and move it to ``target``.

        Returns the points copied.

        Raises:
            SearchUnanswered: no owner answered within ``wait_s``.
            RetrievalError: the owner could not copy the store (its code).
        """
        name = secrets.token_hex(16)
        run_id = f"backup-{name}"
        command = Command(
            run_id=run_id,
            tenant_id=self._tenant,
            subject=self._subject,
            shard=keys.shard_of(run_id, self._settings.shards),
            role=keys.Role.RETRIEVAL,
            deadline=time.time() + wait_s,
            payload=SnapshotTask(name=name),
        )
        stream = keys.role_stream(keys.Role.RETRIEVAL, command.shard)
        await ensure_group(self._redis, stream, keys.group_name(keys.Role.RETRIEVAL))
        await publish(self._redis, command, self._settings)
        key = reply_key(command)
        found = await self._redis.xread({key: "0-0"}, count=1, block=max(1, int(wait_s * 1000)))
        await self._redis.delete(key)
        if not found:
            raise SearchUnanswered(
                f"the process holding the vector store did not answer within {wait_s:g}s",
                hint="is its retrieval role running? `agentbus streams` shows its lag",
            )
        _, entries = found[0]
        reply = SnapshotReply.model_validate_json(wire.raw_data(entries[0][1]))
        copied = staging(root, name)
        if reply.status == "error":
            error = RetrievalError(f"the vector store's owner could not copy it: {reply.message}")
            error.code = reply.code
            raise error
        await asyncio.to_thread(_collect, copied, target)
        return reply.points


def _collect(copied: Path, target: Path) -> None:
    if not copied.is_dir():
        raise RetrievalError(
            f"the vector store's owner wrote no copy at {copied}",
            hint="run the backup with the same AGENTBUS_DATA_DIR / AGENTBUS_QDRANT_PATH",
        )
    shutil.move(copied, target)
