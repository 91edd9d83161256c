"""``agentbus restore``: a backup brought back into the data folder, nothing lost on the way.

Before it touches anything, a restore checks the backup (the manifest, every file's size
and SHA-256, a migration revision this version knows) and that nothing holds the data
folder (the embedded Redis answers while ``agentbus up`` or one of its processes runs, and
the vector store's lock is taken for the whole restore). The data it replaces is moved
aside, into ``replaced-<UTC time>`` in the data folder, never deleted. A backup of an older
migration revision is migrated to this version's head. Last, the erasure ledger is
replayed (`api.app.erasure_replay`): a user erased after the backup began stays erased.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from api.app.erasure_ledger import LEDGER_FILE, ErasureLedger
from api.app.erasure_replay import due, replay
from api.backup import manifest as mf
from api.backup.errors import BackupError, BackupInvalid, BackupRefused
from api.backup.layout import SECRET_FILES, Layout, layout
from api.compose.connection import connect
from api.compose.erasure import erasure_of
from api.compose.settings import AppSettings
from bus.embedded_backup import is_rdb, place_rdb
from bus.store import open_store
from bus.store.migrate import head_revision, known_revision, upgrade_async
from retrieval.edge_store import lock_folder
from retrieval.errors import StoreLocked


@dataclass(frozen=True)
class Restored:
    """What a restore did."""

    manifest: mf.Manifest
    where: Layout
    redis_keys: int
    aside: Path | None
    migrated_from: str | None
    head: str
    replayed: int = 0
    """Erasures carried out again on the restored data (the backup predates them)."""


def _check(src: Path, manifest: mf.Manifest, where: Layout) -> None:
    for required in (mf.STORE_FILE, mf.REDIS_FILE):
        if manifest.entry(required) is None:
            raise BackupInvalid(f"the backup in {src} has no {required}")
    if not is_rdb(src / mf.REDIS_FILE):
        raise BackupInvalid(f"{src / mf.REDIS_FILE} is not a Redis RDB image")
    if manifest.collection != where.collection:
        raise BackupRefused(
            f"the backup holds the vector collection {manifest.collection!r}; this "
            f"deployment uses {where.collection!r}",
            hint="set AGENTBUS_QDRANT_COLLECTION to the backup's collection",
        )
    rev = manifest.sql_revision
    if rev is not None and not known_revision(rev):
        raise BackupRefused(
            f"the backup's store is at migration {rev!r}, which this version does not know "
            f"(a newer agentbus made it; this one's head is {head_revision()!r})",
            hint="restore it with the agentbus version that made it or a newer one",
        )


def _verified(src: Path, where: Layout) -> tuple[Path, mf.Manifest]:
    src = src.resolve()
    if not src.is_dir():
        raise BackupInvalid(f"no backup folder at {src}")
    manifest = mf.read(src)
    mf.verify(src, manifest)
    _check(src, manifest, where)
    return src, manifest


def _set_aside(where: Layout, aside: Path) -> bool:
    """Move the data a restore replaces into ``aside``; False when there was none."""
    moves: list[tuple[Path, Path]] = [
        (where.db.with_name(where.db.name + suffix), aside / (where.db.name + suffix))
        for suffix in ("", "-wal", "-shm")
    ]
    moves.append((where.redis_dir, aside / "redis"))
    if where.vectors.is_dir():  # its lock file stays: this restore holds it
        moves += [(p, aside / "vectors" / p.name) for p in where.vectors.iterdir()]
        moves = [(s, d) for s, d in moves if s.name != ".lock"]
    moves += [(p, aside / p.name) for p in where.secrets()]
    moved = False
    for source, target in moves:
        if source.exists() or source.is_symlink():
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            shutil.move(source, target)
            moved = True
    return moved


def _copy(src: Path, dest: Path, *, private: bool = False) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    mode = 0o600 if private else 0o644
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as out, src.open("rb") as f:
        shutil.copyfileobj(f, out)


def _place(src: Path, manifest: mf.Manifest, where: Layout) -> int:
    _copy(src / mf.STORE_FILE, where.db, private=True)
    prefix = f"{mf.VECTORS_DIR}/"
    for entry in manifest.files:
        if entry.path.startswith(prefix):
            _copy(src / entry.path, where.vectors / entry.path.removeprefix(prefix))
    for name in SECRET_FILES:
        if manifest.entry(name) is not None:
            _copy(src / name, where.data_dir / name, private=True)
    return place_rdb(src / mf.REDIS_FILE, where.data_dir)


async def restore_backup(settings: AppSettings, src: Path) -> Restored:
    """Restore the backup in ``src`` into the data folder the settings name.

    Raises:
        BackupInvalid: ``src`` is not a complete backup, or a file fails its checksum.
        BackupRefused: something holds the data folder, or the backup is of another
            collection or a newer version.
        NotEmbedded: a part is configured as a server.
        BackupError: placing the backup failed (the replaced data is kept aside).
    """
    where = layout(settings)
    src, manifest = await asyncio.to_thread(_verified, src, where)
    if where.up_running():
        raise BackupRefused(
            f"the embedded Redis of {where.data_dir} is running (agentbus up, or a process "
            "started with it)",
            hint="stop it, then restore",
        )
    try:
        lock = lock_folder(where.vectors)
    except StoreLocked as e:
        raise BackupRefused(str(e), hint="stop the process that holds it, then restore") from e
    try:
        where.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        aside = where.data_dir / f"replaced-{mf.now_utc():%Y%m%dT%H%M%SZ}"
        kept = await asyncio.to_thread(_set_aside, where, aside)
        try:
            keys = await asyncio.to_thread(_place, src, manifest, where)
        except Exception as e:
            raise BackupError(
                f"restoring {src} failed: {e}",
                hint=f"the data it replaced is in {aside}" if kept else None,
            ) from e
    finally:
        lock.close()
    head = head_revision()
    migrated_from: str | None = None
    if manifest.sql_revision != head:
        await upgrade_async(settings.bus.resolved_database_url())
        migrated_from = manifest.sql_revision
    ledger = ErasureLedger(where.ledger)
    if manifest.entry(LEDGER_FILE) is not None:
        await asyncio.to_thread(ledger.merge, src / LEDGER_FILE)
    replayed = await _replay(settings, ledger, manifest)
    return Restored(manifest, where, keys, aside if kept else None, migrated_from, head, replayed)


async def _replay(settings: AppSettings, ledger: ErasureLedger, manifest: mf.Manifest) -> int:
    """Carry out again the erasures the backup may predate (`api.app.erasure_replay`);
    how many found a user to erase."""
    erasures = due(ledger, manifest.started_at)
    if not erasures:
        return 0
    async with (
        open_store(settings.bus) as stores,
        connect(settings.bus, embedded=True) as conn,
    ):
        erasure = erasure_of(settings, stores, conn.redis, idle_ms=0)
        if erasure is None or stores.erasure is None:
            return 0
        return len(await replay(erasure, stores.erasure, erasures))
