"""What every repository of the store shares: sessions, error wrapping, portable upserts."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from sqlalchemy.sql.dml import Insert

from bus.errors import StoreError
from bus.store.engine import safe_url
from bus.store.group_commit import GroupCommit, for_engine
from bus.store.scope import Scope, apply_scope
from bus.store.tables import Base


def utcnow() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(UTC)


def insert_ignoring_conflicts(
    session: AsyncSession, model: type[Base], values: dict[str, Any], conflict_on: list[str]
) -> Insert:
    """``INSERT ... ON CONFLICT (conflict_on) DO NOTHING`` in the session's SQL dialect.

    Args:
        session: the session the statement will run in; it decides the dialect.
        model: the mapped class of the table to insert into.
        values: the row to insert.
        conflict_on: the columns of the primary key or unique constraint to check.

    Returns:
        The statement; add ``.returning(...)`` to learn whether a row was inserted.

    Raises:
        StoreError: the session is bound to a database other than SQLite or Postgres.
    """
    return insert_ignoring(session.get_bind().dialect.name, model, values, conflict_on)


def insert_ignoring(
    dialect: str, model: type[Base], values: dict[str, Any] | None, conflict_on: list[str]
) -> Insert:
    """`insert_ignoring_conflicts` for a dialect named directly (``sqlite``, ``postgresql``);
    ``values`` None: the row is passed when the statement is executed."""
    if dialect == "postgresql":
        stmt = postgresql.insert(model)
    elif dialect == "sqlite":
        stmt = sqlite.insert(model)
    else:
        raise StoreError(f"unsupported database {dialect!r}")
    if values is not None:
        stmt = stmt.values(values)
    return stmt.on_conflict_do_nothing(index_elements=conflict_on)


class Dialects:
    """`insert_ignoring` built once per SQL dialect, its row passed at execution.

    For the run path: ``conn.execute(stmt, row)`` with a statement built once costs a
    fraction of building the statement with its values on every call (SQLAlchemy's cache
    key alone walks every value).
    """

    def __init__(self, model: type[Base], conflict_on: list[str]) -> None:
        self._model = model
        self._conflict_on = conflict_on
        self._built: dict[str, Insert] = {}

    def get(self, dialect: str) -> Insert:
        """The statement for ``dialect`` (``sqlite``, ``postgresql``).

        Raises:
            StoreError: another database.
        """
        stmt = self._built.get(dialect)
        if stmt is None:
            stmt = self._built[dialect] = insert_ignoring(
                dialect, self._model, None, self._conflict_on
            )
        return stmt


class Repository:
    """The base of the store's repositories.

    Args:
        db: an engine (the repository makes its own session factory) or a session factory.
            The caller owns the engine and disposes of it.
    """

    def __init__(self, db: AsyncEngine | async_sessionmaker[AsyncSession]) -> None:
        if isinstance(db, AsyncEngine):
            db = async_sessionmaker(db, expire_on_commit=False)
        self._sessions = db
        bind = db.kw.get("bind")
        self._engine = bind if isinstance(bind, AsyncEngine) else None
        self._where = safe_url(bind.url) if isinstance(bind, AsyncEngine) else "the database"

    def _group_commit(self) -> GroupCommit:
        """Shared transactions for the run path's writes (see `bus.store.group_commit`)."""
        if self._engine is None:
            raise StoreError("group commit needs a repository built on an engine")
        return for_engine(self._engine)

    @asynccontextmanager
    async def _session(self, action: str) -> AsyncGenerator[AsyncSession, None]:
        """A session in one transaction; driver failures become a ``StoreError``.

        A ``StoreError`` raised inside the block rolls the transaction back and propagates
        unchanged.
        """
        try:
            async with self._sessions.begin() as session:
                yield session
        except (SQLAlchemyError, OSError) as e:
            # DBAPIError's own text repeats the SQL and its parameters (user questions);
            # the driver's message alone says what went wrong.
            cause = e.orig if isinstance(e, DBAPIError) else e
            raise StoreError(f"could not {action} in {self._where}: {cause}") from e

    @asynccontextmanager
    async def _scoped(self, scope: Scope, action: str) -> AsyncGenerator[AsyncSession, None]:
        """`_session` whose transaction runs as ``scope`` for row-level security (Postgres)."""
        async with self._session(action) as session:
            await apply_scope(session, scope)
            yield session
