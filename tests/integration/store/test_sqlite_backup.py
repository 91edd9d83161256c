"""The SQLite store backed up through SQLite's online backup API while a writer commits."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from bus.errors import StoreError
from bus.store.migrate import upgrade
from bus.store.sqlite_backup import backup_sqlite, revision_of, sqlite_file


def test_a_copy_taken_during_commits_holds_whole_transactions_only(tmp_path: Path) -> None:
    db = tmp_path / "live.db"
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE pair (n INTEGER, side TEXT)")
    stop = threading.Event()
    committed: list[int] = []

    def keep_committing() -> None:
        conn = sqlite3.connect(db, timeout=10)
        n = 0
        while not stop.is_set():
            with conn:  # one transaction: both rows or neither
                conn.execute("INSERT INTO pair VALUES (?, 'left')", (n,))
                conn.execute("INSERT INTO pair VALUES (?, 'right')", (n,))
            n += 1
            committed.append(n)
        conn.close()

    writer = threading.Thread(target=keep_committing)
    writer.start()
    try:
        while len(committed) < 200:  # the writer is well under way
            stop.wait(0.01)
        backup_sqlite(db, tmp_path / "copy.db")
        more = len(committed) + 10
        while len(committed) < more:  # commits made after the copy
            stop.wait(0.01)
    finally:
        stop.set()
        writer.join()

    copy = sqlite3.connect(tmp_path / "copy.db")
    try:
        assert copy.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        rows = copy.execute("SELECT count(*) FROM pair").fetchone()[0]
        halves = copy.execute(
            "SELECT count(*) FROM (SELECT n FROM pair GROUP BY n HAVING count(*) != 2)"
        ).fetchone()[0]
    finally:
        copy.close()
    assert rows >= 400 and rows % 2 == 0 and halves == 0
    assert rows < 2 * len(committed)  # the writer went on after the copy


def test_the_copy_knows_its_migration_revision(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    upgrade(f"sqlite+aiosqlite:///{db}", "0015")
    backup_sqlite(db, tmp_path / "copy.db")
    assert revision_of(tmp_path / "copy.db") == "0015"


def test_a_missing_store_and_a_server_url_are_told_apart(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no SQLite store"):
        backup_sqlite(tmp_path / "none.db", tmp_path / "copy.db")
    assert sqlite_file("postgresql+asyncpg://u@h/db") is None
    assert sqlite_file(f"sqlite+aiosqlite:///{tmp_path}/s.db") == (tmp_path / "s.db").resolve()
