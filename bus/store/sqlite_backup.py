"""Backup of the embedded SQLite store through SQLite's online backup API.

A file copy of a live database in WAL mode can miss commits still in the ``-wal`` file or
catch a page half written; ``sqlite3.Connection.backup`` copies the pages as one read
transaction sees them, while writers go on (WAL readers never block the writer).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlalchemy.engine import make_url

from bus.errors import StoreError


def sqlite_file(url: str) -> Path | None:
    """The database file of a SQLite URL; None for any other database or an in-memory one."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database:
        return None
    if parsed.database == ":memory:":
        return None
    return Path(parsed.database).resolve()


def backup_sqlite(src: Path, dest: Path) -> None:
    """Copy the database ``src`` to ``dest`` (a new file) as of one moment.

    Raises:
        StoreError: ``src`` is not a readable SQLite database.
    """
    if not src.is_file():
        raise StoreError(f"no SQLite store at {src}")
    try:
        source = sqlite3.connect(src)
        try:
            target = sqlite3.connect(dest)
            try:
                # One step (pages=-1): the whole copy is one read transaction, so it is
                # the database as of one commit, not pages from before and after another.
                source.backup(target, pages=-1)
            finally:
                target.close()
        finally:
            source.close()
    except sqlite3.Error as e:
        raise StoreError(f"backing up the SQLite store {src} failed: {e}") from e


def revision_of(db: Path) -> str | None:
    """The alembic revision a SQLite database file is at (None: never migrated)."""
    if not db.is_file():
        raise StoreError(f"no SQLite store at {db}")
    try:
        # Not ``mode=ro``: a database in WAL mode opens read-only only beside its -shm file.
        conn = sqlite3.connect(db)
        try:
            row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
        finally:
            conn.close()
    except sqlite3.OperationalError:
        return None
    except sqlite3.Error as e:
        raise StoreError(f"cannot read the SQLite store {db}: {e}") from e
    return str(row[0]) if row else None
