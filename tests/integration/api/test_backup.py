"""`take_backup` and `restore_backup` on the embedded defaults, with nothing running: a round
trip through an older migration, and every refusal that keeps data from being lost or mixed."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from api.backup.errors import BackupInvalid, BackupRefused, DataDirMissing, NotEmbedded
from api.backup.manifest import MANIFEST
from api.backup.restore import restore_backup
from api.backup.take import take_backup
from api.compose.settings import AppSettings
from bus.embedded import EmbeddedRedis
from bus.store.migrate import current_revision, head_revision, upgrade_async
from retrieval.edge_store import lock_folder


@pytest.fixture
def embedded_settings(make_settings: Callable[..., AppSettings]) -> AppSettings:
    """Nothing configured but the data folder: the embedded defaults."""
    return make_settings(redis_url=None, database_url=None, qdrant_url=None, qdrant_path=None)


async def _store_at(settings: AppSettings, revision: str = "head") -> str:
    url = settings.bus.resolved_database_url()
    await upgrade_async(url, revision)
    return url


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name not in ("redis.log", "dump.rdb")  # a backup's BGSAVE
    }


async def test_a_backup_of_an_older_revision_restores_and_is_migrated(
    embedded_settings: AppSettings, tmp_path: Path
) -> None:
    s = embedded_settings
    url = await _store_at(s, "0015")
    data = s.bus.data_dir.resolve()
    (data / "signing-key").write_text("k" * 64)
    with EmbeddedRedis(data) as server:
        client = redis.Redis.from_url(server.url)
        client.set("ab:kept", "1")
        client.close()

    manifest = await take_backup(s, tmp_path / "backup")
    (data / "signing-key").write_text("changed after the backup")

    done = await restore_backup(s, tmp_path / "backup")

    assert manifest.sql_revision == "0015" and manifest.redis_version
    names = {f.path for f in manifest.files}
    assert {"store.db", "redis.rdb", "signing-key"} <= names
    assert all(os.stat(tmp_path / "backup" / f.path).st_mode & 0o077 == 0 for f in manifest.files)
    assert done.redis_keys == 1 and done.migrated_from == "0015"
    assert await current_revision(url) == head_revision()
    assert (data / "signing-key").read_text() == "k" * 64
    assert done.aside is not None
    assert (done.aside / "signing-key").read_text() == "changed after the backup"
    assert (done.aside / "agentbus.db").is_file() and (done.aside / "redis").is_dir()


async def test_a_damaged_or_forged_backup_is_refused_before_anything_moves(
    embedded_settings: AppSettings, tmp_path: Path
) -> None:
    s = embedded_settings
    await _store_at(s)
    backup = tmp_path / "backup"
    await take_backup(s, backup)
    data = s.bus.data_dir.resolve()
    before = _snapshot(data)

    with (backup / "store.db").open("ab") as f:
        f.write(b"tampered")
    with pytest.raises(BackupInvalid, match="does not match its checksum"):
        await restore_backup(s, backup)

    await take_backup(s, backup, force=True)
    doc = json.loads((backup / MANIFEST).read_text())
    doc["files"][0]["path"] = "../outside"
    (backup / MANIFEST).write_text(json.dumps(doc))
    with pytest.raises(BackupInvalid, match="not a path inside the backup"):
        await restore_backup(s, backup)

    (backup / MANIFEST).unlink()
    with pytest.raises(BackupInvalid, match="not a backup, or one that did not finish"):
        await restore_backup(s, backup)
    assert _snapshot(data) == before


async def test_a_restore_is_refused_while_the_data_folder_is_in_use(
    embedded_settings: AppSettings, tmp_path: Path
) -> None:
    s = embedded_settings
    await _store_at(s)
    await take_backup(s, tmp_path / "backup")
    data = s.bus.data_dir.resolve()

    with EmbeddedRedis(data), pytest.raises(BackupRefused, match="is running"):
        await restore_backup(s, tmp_path / "backup")
    held = lock_folder(data / "vectors")  # a process owns the vector store
    try:
        with pytest.raises(BackupRefused, match="open in another process"):
            await restore_backup(s, tmp_path / "backup")
    finally:
        held.close()


async def test_a_backup_from_a_newer_version_or_another_collection_is_refused(
    embedded_settings: AppSettings, make_settings: Callable[..., AppSettings], tmp_path: Path
) -> None:
    s = embedded_settings
    await _store_at(s)
    backup = tmp_path / "backup"
    await take_backup(s, backup)
    other = make_settings(
        redis_url=None, database_url=None, qdrant_url=None, qdrant_collection="other"
    )
    with pytest.raises(BackupRefused, match="AGENTBUS_QDRANT_COLLECTION"):
        await restore_backup(other, backup)

    doc = json.loads((backup / MANIFEST).read_text())
    doc["sql_revision"] = "9999"
    (backup / MANIFEST).write_text(json.dumps(doc))
    with pytest.raises(BackupRefused, match="a newer agentbus made it"):
        await restore_backup(s, backup)


async def test_a_backup_refuses_a_full_folder_a_missing_store_and_servers(
    embedded_settings: AppSettings, make_settings: Callable[..., AppSettings], tmp_path: Path
) -> None:
    s = embedded_settings
    with pytest.raises(DataDirMissing, match="no data folder"):
        await take_backup(s, tmp_path / "backup")

    await _store_at(s)
    full = tmp_path / "full"
    full.mkdir()
    (full / "notes.txt").write_text("mine")
    with pytest.raises(BackupRefused, match="not empty"):
        await take_backup(s, full)
    await take_backup(s, full, force=True)
    assert (full / "notes.txt").read_text() == "mine"  # --force replaces only a backup
    assert (full / MANIFEST).is_file()

    with pytest.raises(BackupRefused, match="inside the data folder"):
        await take_backup(s, s.bus.data_dir / "backup")
    server = make_settings(redis_url="redis://127.0.0.1:6379/13", database_url=None)
    with pytest.raises(NotEmbedded, match="AGENTBUS_REDIS_URL"):
        await take_backup(server, tmp_path / "b2")
    with pytest.raises(NotEmbedded, match="AGENTBUS_REDIS_URL"):
        await restore_backup(server, full)
