"""A SQLite state store migrated to head once per test process, copied for each test.

Migrating a new SQLite file runs every migration (about a third of a second, hundreds of
times a suite); copying a migrated one takes well under a millisecond. The copy is the
file a fresh migration leaves: the template is made by the same ``upgrade_async``, and
once its engine is disposed SQLite keeps nothing outside the file (WAL mode is in its
header). A store's own migration still runs on the copy, and finds it at head.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import re
import shutil
import tempfile
from pathlib import Path

from bus.store.migrate import upgrade_async

#: The part of a SQLite URL after ``sqlite+aiosqlite:///`` that is a file's absolute path
#: (``/`` first; not ``:memory:``, a ``file:`` URI or a path with a query).
PLAIN_FILE = re.compile(r"^/[^?]+$")
_PREFIX = "sqlite+aiosqlite:///"
_template: Path | None = None


async def _migrated_template() -> Path:
    global _template
    if _template is None:
        folder = Path(tempfile.mkdtemp(prefix="agentbus-sqlite-head-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        partial = folder / "partial.db"
        await upgrade_async(f"{_PREFIX}{partial}")
        os.replace(partial, folder / "store.db")  # whole, or not there
        _template = folder / "store.db"
    return _template


def _copy(template: Path, path: Path, *, only_new: bool) -> bool:
    if only_new and path.exists():
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, path)
    return True


async def migrated_sqlite(path: Path) -> str:
    """Put an empty store migrated to head at ``path`` (its folder made if missing); its
    ``sqlite+aiosqlite`` URL."""
    await asyncio.to_thread(_copy, await _migrated_template(), path, only_new=False)
    return f"{_PREFIX}{path}"


async def seed_sqlite(url: str) -> None:
    """Before a migration to head of ``url``: when it names a SQLite file not there yet,
    put a migrated copy there, so the migration finds it at head (Postgres, or a file
    that exists, is left to the migration)."""
    file = url.removeprefix(_PREFIX)
    if url.startswith(_PREFIX) and PLAIN_FILE.match(file):
        await asyncio.to_thread(_copy, await _migrated_template(), Path(file), only_new=True)
