"""The async engine factory: the one place that knows SQLite and Postgres apart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, InvalidRequestError, NoSuchModuleError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import ConnectionPoolEntry

from bus.errors import StoreError

SQLITE_BUSY_TIMEOUT_MS = 5000
# Seconds to wait for a Postgres connection; asyncpg's own default is a minute, far too long
# for a process that should fail fast and say which URL it could not reach.
PG_CONNECT_TIMEOUT_S = 10

_URL_HINT = "use sqlite+aiosqlite:///path/to/file.db or postgresql+asyncpg://user@host/db"


def make_engine(url: str) -> AsyncEngine:
    """Create an async engine for the state store.

    SQLite gets WAL (readers never block the writer), a busy timeout and foreign keys on
    every connection, and the database file's folder is created if missing. Postgres gets
    a small pre-pinged pool.

    Args:
        url: a SQLAlchemy async URL (``sqlite+aiosqlite://`` or ``postgresql+asyncpg://``).

    Returns:
        The engine; the caller owns it and must ``await engine.dispose()``.

    Raises:
        StoreError: the URL is malformed, names a sync driver, or its folder can't be made.
    """
    try:
        parsed = make_url(url)
    except ArgumentError as e:
        raise StoreError(f"invalid database URL: {e}", hint=_URL_HINT) from e
    if parsed.get_backend_name() == "sqlite":
        _ensure_sqlite_folder(parsed)
        kwargs: dict[str, Any] = {}
    elif parsed.get_backend_name() == "postgresql":
        kwargs = {
            "pool_size": 5,
            "max_overflow": 10,
            "pool_timeout": 30,
            # Drops connections a restarted server or a NAT idle timeout killed, instead of
            # handing a dead one to the next query.
            "pool_pre_ping": True,
            "pool_recycle": 1800,
            "connect_args": {"timeout": PG_CONNECT_TIMEOUT_S},
        }
    else:
        raise StoreError(f"unsupported database {parsed.get_backend_name()!r}", hint=_URL_HINT)
    try:
        engine = create_async_engine(parsed, **kwargs)
    except (InvalidRequestError, NoSuchModuleError, ArgumentError) as e:
        raise StoreError(f"cannot use database URL {safe_url(parsed)}: {e}", hint=_URL_HINT) from e
    if parsed.get_backend_name() == "sqlite":
        event.listen(engine.sync_engine, "connect", sqlite_pragmas)
    return engine


def sqlite_pragmas(dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
    # PRAGMAs are per connection, so they must run on every new one, not once per engine.
    cursor = dbapi_connection.cursor()
    try:
        # WAL + synchronous=NORMAL: a commit survives a crash of the process (what the
        # embedded mode must survive); only an OS crash or power cut can lose the last
        # commits. FULL fsyncs every commit, and measured here that capped `agentbus up`
        # well below its runs/s target.
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys=ON")
    finally:
        cursor.close()


def _ensure_sqlite_folder(url: URL) -> None:
    database = url.database
    # In-memory and URI-form databases have no plain path whose folder we could create.
    if not database or database == ":memory:" or database.startswith("file:"):
        return
    folder = Path(database).expanduser().parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StoreError(
            f"cannot create the folder {folder} for the SQLite store: {e}",
            hint="set AGENTBUS_DATA_DIR or AGENTBUS_DATABASE_URL to a writable place",
        ) from e


def safe_url(url: str | URL) -> str:
    """The URL with its password masked, fit for an error message or a log."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparseable database URL>"
