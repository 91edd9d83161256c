"""``agentbus backup``: a consistent copy of the embedded defaults, while ``up`` runs or not.

The parts are copied in the order the data flows: the bus first (every step's effects are
committed there before the stores get them), then the vector store, then the SQL store. The
stores' copies are therefore never older than the bus's, and what a restored bus still holds
pending (an ingest batch, an audit record, a step) is applied again, idempotently, to stores
that may already have it; the reverse order could restore a bus that believes work done
which the stores' copies lack.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from importlib.metadata import version
from pathlib import Path

from api.app.erasure_ledger import LEDGER_FILE
from api.backup import manifest as mf
from api.backup.errors import BackupRefused, DataDirMissing
from api.backup.layout import SECRET_FILES, Layout, layout
from api.compose.settings import AppSettings
from bus import embedded
from bus.embedded_backup import save_rdb
from bus.store.sqlite_backup import backup_sqlite, revision_of
from bus.typed_redis import from_url
from retrieval.edge_backup import RemoteSnapshot, copy_unowned


def _prepare(dest: Path, *, force: bool) -> None:
    if dest.exists() and not dest.is_dir():
        raise BackupRefused(f"{dest} is a file, not a folder")
    if dest.exists() and any(dest.iterdir()):
        if not force:
            raise BackupRefused(
                f"{dest} is not empty", hint="give an empty or new folder, or --force to replace"
            )
        # Only what a backup writes is replaced; anything else in the folder stays.
        for name in (
            mf.MANIFEST,
            mf.STORE_FILE,
            mf.REDIS_FILE,
            mf.VECTORS_DIR,
            *SECRET_FILES,
            LEDGER_FILE,
        ):
            target = dest / name
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            else:
                target.unlink(missing_ok=True)
    dest.mkdir(parents=True, exist_ok=True, mode=0o700)
    dest.chmod(0o700)  # the backup holds the store, its keys' digests and the signing key


async def _copy_vectors(where: Layout, settings: AppSettings, target: Path, wait_s: float) -> int:
    if not _ready_target(where, target):
        return 0
    points = await copy_unowned(where.vectors, where.collection, target)
    if points is not None:
        return points
    # Another process owns the store: ask it over the embedded bus.
    if not where.up_running():
        raise BackupRefused(
            f"the vector store {where.vectors} is open in another process, and no embedded "
            "Redis runs to ask it for a copy",
            hint="let that process (an `agentbus ingest --direct`?) finish, then back up",
        )
    redis = from_url(embedded.socket_url(where.data_dir))
    try:
        remote = RemoteSnapshot(redis, settings.bus, settings.api.tenant, settings.api.subject)
        return await remote.copy(where.vectors, target, wait_s=wait_s)
    finally:
        await redis.aclose()


def _ready_target(where: Layout, target: Path) -> bool:
    """Make the copy's parent folder; False (an empty copy) when the store was never made."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if where.vectors.exists():
        return True
    target.mkdir()  # nothing ever ingested: an empty collection folder
    return False


def _checked(where: Layout, dest: Path, *, force: bool) -> Path:
    """The backup folder, resolved and ready, once the data folder is found."""
    if not where.data_dir.is_dir():
        raise DataDirMissing(f"no data folder at {where.data_dir}")
    if not where.db.is_file():
        raise DataDirMissing(f"no agentbus store at {where.db}: nothing to back up")
    dest = dest.resolve()
    if dest == where.data_dir or dest.is_relative_to(where.data_dir):
        raise BackupRefused(f"{dest} is inside the data folder {where.data_dir}")
    _prepare(dest, force=force)
    return dest


def _copy_secret(src: Path, dest: Path) -> None:
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out, src.open("rb") as f:
        shutil.copyfileobj(f, out)


async def take_backup(
    settings: AppSettings, dest: Path, *, force: bool = False, wait_s: float = 120.0
) -> mf.Manifest:
    """Back up the embedded Redis, vector store and SQLite store into ``dest``.

    Args:
        settings: where the parts are (the data folder).
        dest: the backup folder: new or empty (or, with ``force``, replaced).
        force: replace a previous backup in ``dest``.
        wait_s: how long the process owning the vector store may take to copy it.

    Raises:
        DataDirMissing: no data folder, or no store in it.
        NotEmbedded: a part is configured as a server.
        BackupRefused: ``dest`` holds something and ``force`` was not given.
    """
    where = layout(settings)
    dest = _checked(where, dest, force=force)
    started = mf.now_utc()
    redis_version = await asyncio.to_thread(save_rdb, where.data_dir, dest / mf.REDIS_FILE)
    vectors = dest / mf.VECTORS_DIR / where.collection
    points = await _copy_vectors(where, settings, vectors, wait_s)
    await asyncio.to_thread(backup_sqlite, where.db, dest / mf.STORE_FILE)
    written = [mf.REDIS_FILE, mf.VECTORS_DIR, mf.STORE_FILE]
    for secret in [*where.secrets(), where.ledger]:
        if secret.is_file():
            _copy_secret(secret, dest / secret.name)
            written.append(secret.name)
    files = await asyncio.to_thread(mf.describe, dest, written)
    for entry in files:  # the backup holds the whole store: readable by its owner only
        (dest / entry.path).chmod(0o600)
    manifest = mf.Manifest(
        created_at=mf.now_utc(),
        started_at=started,
        agentbus_version=version("agentbus"),
        data_dir=str(where.data_dir),
        sql_revision=revision_of(dest / mf.STORE_FILE),
        redis_version=redis_version,
        qdrant_edge_version=version("qdrant-edge-py"),
        collection=where.collection,
        vector_points=points,
        files=files,
    )
    mf.write(dest, manifest)
    return manifest
