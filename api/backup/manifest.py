"""A backup's manifest: what it holds, when it was taken, from what, with every file's checksum.

``manifest.json`` is written last, so a backup interrupted half way has none and no restore
accepts it. A restore reads the manifest as untrusted input: every path must stay inside the
backup folder, and every file must have the size and SHA-256 the manifest says.
"""

from __future__ import annotations

import hashlib
import os
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError, field_validator

from api.backup.errors import BackupInvalid

MANIFEST = "manifest.json"
#: The parts' names inside a backup folder.
STORE_FILE = "store.db"
REDIS_FILE = "redis.rdb"
VECTORS_DIR = "vectors"


class FileEntry(BaseModel):
    """One file of the backup: its path (relative, POSIX), size and SHA-256."""

    model_config = ConfigDict(frozen=True)

    path: str
    bytes: int = Field(ge=0)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")

    @field_validator("path")
    @classmethod
    def _inside(cls, value: str) -> str:
        p = PurePosixPath(value)
        if not value or p.is_absolute() or ".." in p.parts or "\\" in value or "\x00" in value:
            raise ValueError(f"not a path inside the backup: {value!r}")
        return value


class Manifest(BaseModel):
    """What ``agentbus backup`` wrote, and what ``agentbus restore`` checks and restores."""

    model_config = ConfigDict(frozen=True)

    format: Literal[1] = 1
    created_at: AwareDatetime
    started_at: AwareDatetime | None = Field(
        default=None, description="When the copy began (what erasures a restore replays)."
    )
    agentbus_version: str
    data_dir: str = Field(description="The folder backed up (for the operator's eyes).")
    sql_revision: str | None = Field(description="The store's migration revision.")
    redis_version: str
    qdrant_edge_version: str
    collection: str
    vector_points: int = Field(ge=0)
    files: list[FileEntry]

    def entry(self, path: str) -> FileEntry | None:
        """The file at ``path``, if the backup holds it."""
        return next((f for f in self.files if f.path == path), None)

    @property
    def total_bytes(self) -> int:
        """The size of every file together."""
        return sum(f.bytes for f in self.files)


def sha256_of(path: Path) -> str:
    """The file's SHA-256, hex."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def describe(folder: Path, names: list[str]) -> list[FileEntry]:
    """Every file of ``names`` (files or folders in ``folder``), with size and checksum."""
    paths: list[Path] = []
    for name in names:
        top = folder / name
        paths += sorted(p for p in top.rglob("*") if p.is_file()) if top.is_dir() else [top]
    return [
        FileEntry(
            path=p.relative_to(folder).as_posix(), bytes=p.stat().st_size, sha256=sha256_of(p)
        )
        for p in paths
    ]


def write(folder: Path, manifest: Manifest) -> None:
    """Write ``manifest.json`` (mode 0600: the backup holds the store's secrets)."""
    path = folder / MANIFEST
    tmp = folder / (MANIFEST + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(manifest.model_dump_json(indent=2))
    os.replace(tmp, path)


def read(folder: Path) -> Manifest:
    """The manifest of the backup in ``folder``.

    Raises:
        BackupInvalid: there is none, or it is not a manifest this version reads.
    """
    path = folder / MANIFEST
    if not path.is_file():
        raise BackupInvalid(
            f"no {MANIFEST} in {folder}: not a backup, or one that did not finish",
            hint="give the folder `agentbus backup` wrote",
        )
    try:
        return Manifest.model_validate_json(path.read_bytes())
    except ValidationError as e:
        raise BackupInvalid(f"{path} is not a valid backup manifest: {e}") from e


def verify(folder: Path, manifest: Manifest) -> None:
    """Check every file the manifest lists: inside ``folder``, its size, its SHA-256.

    Raises:
        BackupInvalid: a file is missing, outside the folder, or not what was backed up.
    """
    base = folder.resolve()
    for entry in manifest.files:
        given = base / entry.path
        path = given.resolve()
        if given.is_symlink() or not path.is_relative_to(base) or not path.is_file():
            raise BackupInvalid(f"the backup's file {entry.path} is missing or not a file")
        if path.stat().st_size != entry.bytes or sha256_of(path) != entry.sha256:
            raise BackupInvalid(
                f"the backup's file {entry.path} does not match its checksum: "
                "it changed or is damaged since the backup",
                hint="restore another backup; this one is not what was backed up",
            )


def now_utc() -> datetime:
    """The current time, UTC."""
    return datetime.now(UTC)
