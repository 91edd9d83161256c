"""Group commit: the run path's writes, many to a transaction, at the cost SQL really has.

Writes that arrive while a transaction is in flight share the next one; a caller returns
once its write is committed. Units of work are plain functions of a Core ``Connection``
(no ORM session: the hot path pays for neither identity maps nor ORM compilation), run in
arrival order. When a batch fails, each of its units is retried in a transaction of its
own, so one bad write fails only its own caller.

How the transaction runs depends on the database:

* **SQLite** (the embedded default): on the event loop's own thread, through a private
  synchronous connection. A WAL-mode SQLite write transaction takes ~20 µs here, while the
  same transaction through aiosqlite's worker thread took ~1 ms of thread hand-offs, which
  made SQL the largest cost of a run. A transaction that never yields is also never
  interleaved with another write of this process, so they cannot contend for SQLite's one
  write lock. If the lock is held (by another process, or by an aiosqlite transaction of
  this one, which needs the loop to finish), the connection waits at most
  ``_SQLITE_WAIT_MS`` in SQLite's busy handler, then yields to the loop and tries again,
  for up to the store's usual busy timeout.
* **Postgres**: on the async engine (asyncpg), the units running inside ``run_sync``.

One group commit serves every repository built on the same engine (`for_engine`).

The run path's own statements go through `Prepared`: on SQLite, compiled once and run on
the driver's cursor, without SQLAlchemy's per-execution work (the compiled cache's
lookup, an execution context, a result object), which cost more CPU than SQLite's own.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, Insert, Select, Update, create_engine, event
from sqlalchemy.exc import DBAPIError, OperationalError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from bus.errors import StoreError
from bus.store.engine import SQLITE_BUSY_TIMEOUT_MS, safe_url, sqlite_pragmas

T = TypeVar("T")
Work = Callable[[Connection], Any]

# How long one attempt may block the event loop waiting for another process's write.
_SQLITE_WAIT_MS = 5
_BY_ENGINE: weakref.WeakKeyDictionary[AsyncEngine, GroupCommit] = weakref.WeakKeyDictionary()


def for_engine(engine: AsyncEngine) -> GroupCommit:
    """The group commit of ``engine`` (made on first use, disposed with the engine)."""
    group = _BY_ENGINE.get(engine)
    if group is None:
        group = _BY_ENGINE[engine] = GroupCommit(engine)
    return group


class GroupCommit:
    """Runs units of work against ``engine``, many to a transaction.

    Args:
        engine: the database; the caller owns it and disposes of it.
        max_batch: the most units one transaction carries.
    """

    def __init__(self, engine: AsyncEngine, *, max_batch: int = 256) -> None:
        self._engine = engine
        self._max_batch = max_batch
        self._queue: list[tuple[Work, str, asyncio.Future[Any]]] = []
        self._flusher: asyncio.Task[None] | None = None
        self._where = safe_url(engine.url)
        self._sync: Engine | None = None
        self._sync_conn: Connection | None = None
        if engine.dialect.name == "sqlite":
            self._sync = _inline_sqlite(engine)
            weakref.finalize(engine, self._close_sync)

    @property
    def dialect(self) -> str:
        """The database's SQL dialect (``sqlite`` or ``postgresql``)."""
        return self._engine.dialect.name

    async def run(self, work: Callable[[Connection], T], action: str) -> T:
        """Run ``work`` in the next transaction; returns its result once that committed.

        Raises:
            StoreError: the database failed (``action`` says what was being done), or
                ``work`` raised it.
        """
        done: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._queue.append((work, action, done))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush())
        return await done

    async def _flush(self) -> None:
        while self._queue:
            batch = self._queue[: self._max_batch]
            del self._queue[: self._max_batch]
            try:
                results = await self._transaction([w for w, _, _ in batch])
            except Exception as e:
                if len(batch) == 1:
                    _settle(batch[0][2], error=self._error(e, batch[0][1]))
                    continue
                for work, action, done in batch:  # find the one that failed
                    try:
                        (result,) = await self._transaction([work])
                    except Exception as one:
                        _settle(done, error=self._error(one, action))
                    else:
                        _settle(done, result=result)
                continue
            for (_, _, done), result in zip(batch, results, strict=True):
                _settle(done, result=result)

    async def _transaction(self, units: list[Work]) -> list[Any]:
        if self._sync is None:
            async with self._engine.begin() as conn:
                return await conn.run_sync(lambda c: [unit(c) for unit in units])
        give_up = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
        while True:
            conn = self._sync_conn or self._sync.connect()  # kept: no pool round per batch
            self._sync_conn = conn
            try:
                with conn.begin():
                    return [unit(conn) for unit in units]
            except OperationalError as e:
                if "locked" not in str(e.orig) or time.monotonic() > give_up:
                    self._drop_sync_conn()
                    raise
            except Exception:
                if conn.invalidated or conn.closed:
                    self._drop_sync_conn()
                raise
            await asyncio.sleep(0.002)  # another process is writing: let the loop run

    def _close_sync(self) -> None:
        self._drop_sync_conn()
        if self._sync is not None:
            self._sync.dispose()

    def _drop_sync_conn(self) -> None:
        if self._sync_conn is not None:
            self._sync_conn.close()
            self._sync_conn = None

    def _error(self, e: Exception, action: str) -> Exception:
        if isinstance(e, StoreError) or not isinstance(e, SQLAlchemyError | OSError):
            return e
        # DBAPIError's own text repeats the SQL and its parameters (user questions).
        cause = e.orig if isinstance(e, DBAPIError) else e
        error = StoreError(f"could not {action} in {self._where}: {cause}")
        error.__cause__ = e
        return error


class Prepared:
    """A statement of the run path, compiled once per dialect and run with its parameters.

    On SQLite it runs on the DBAPI cursor of the unit's connection (in the transaction
    the group commit holds): the parameters go through the statement's own bind
    processors (timestamps, JSON), as SQLAlchemy would pass them. On another database it
    runs through SQLAlchemy. Expanding parameters (``IN`` lists) are not supported.

    Args:
        stmt: the statement, with named bound parameters.
    """

    def __init__(self, stmt: Select[Any] | Insert | Update) -> None:
        self.stmt = stmt
        self._sqlite: tuple[str, list[tuple[str, Any]]] | None = None

    def _compiled(self, conn: Connection) -> tuple[str, list[tuple[str, Any]]]:
        if self._sqlite is None:
            compiled = self.stmt.compile(dialect=conn.dialect)
            # What SQLAlchemy applies to each parameter (a TypeDecorator's, then its type's).
            processors: Mapping[str, Any] = compiled._bind_processors  # pyright: ignore[reportPrivateUsage]
            names = compiled.positiontup or []
            if any(compiled.binds[n].expanding for n in names):
                raise TypeError("Prepared does not take expanding parameters")
            params: list[tuple[str, Any]] = [
                (compiled.binds[n].key, processors.get(n)) for n in names
            ]
            self._sqlite = (compiled.string, params)
        return self._sqlite

    def _positional(self, conn: Connection, values: dict[str, Any]) -> tuple[str, list[Any]]:
        sql, params = self._compiled(conn)
        row = [values.get(key) for key, _ in params]
        for i, (_, process) in enumerate(params):
            if process is not None and row[i] is not None:
                row[i] = process(row[i])
        return sql, row

    def rowcount(self, conn: Connection, values: dict[str, Any]) -> int:
        """Run it once; the rows it changed."""
        if conn.dialect.name != "sqlite":
            return conn.execute(self.stmt, values).rowcount  # pyright: ignore[reportAttributeAccessIssue]
        cursor = self._sqlite_execute(conn, values)
        try:
            return cursor.rowcount
        finally:
            cursor.close()

    def first(self, conn: Connection, values: dict[str, Any]) -> tuple[Any, ...] | None:
        """Run it once; the first row it returned, raw (None: none)."""
        if conn.dialect.name != "sqlite":
            row = conn.execute(self.stmt, values).first()
            return None if row is None else tuple(row)
        cursor = self._sqlite_execute(conn, values)
        try:
            return cursor.fetchone()
        finally:
            cursor.close()

    def all(self, conn: Connection, values: dict[str, Any]) -> list[tuple[Any, ...]]:
        """Run it once; every row it returned, raw."""
        if conn.dialect.name != "sqlite":
            return [tuple(row) for row in conn.execute(self.stmt, values)]
        cursor = self._sqlite_execute(conn, values)
        try:
            return cursor.fetchall()
        finally:
            cursor.close()

    def many(self, conn: Connection, rows: list[dict[str, Any]]) -> None:
        """Run it once per row (``executemany``)."""
        if conn.dialect.name != "sqlite":
            conn.execute(self.stmt, rows)
            return
        sql, _ = self._compiled(conn)
        positional = [self._positional(conn, values)[1] for values in rows]
        cursor = conn.connection.driver_connection.cursor()  # pyright: ignore[reportOptionalMemberAccess]
        try:
            self._observed(conn, cursor, sql, positional, many=True)
        finally:
            cursor.close()

    def _sqlite_execute(self, conn: Connection, values: dict[str, Any]) -> Any:
        sql, row = self._positional(conn, values)
        cursor = conn.connection.driver_connection.cursor()  # pyright: ignore[reportOptionalMemberAccess]
        try:
            self._observed(conn, cursor, sql, row, many=False)
        except BaseException:
            cursor.close()
            raise
        return cursor

    @staticmethod
    def _observed(conn: Connection, cursor: Any, sql: str, params: Any, *, many: bool) -> None:
        # SQLAlchemy's cursor events still fire (statement counters, instrumentation): the
        # statement is SQL's cost whichever way it is sent.
        events = conn.dispatch
        observed = bool(events.before_cursor_execute) or bool(events.after_cursor_execute)
        if observed:
            events.before_cursor_execute(conn, cursor, sql, params, None, many)
        try:
            if many:
                cursor.executemany(sql, params)
            else:
                cursor.execute(sql, params)
        except Exception as e:
            # As SQLAlchemy raises it: an OperationalError ("locked") is retried.
            raise DBAPIError.instance(sql, params, e, conn.dialect.loaded_dbapi.Error) from e
        if observed:
            events.after_cursor_execute(conn, cursor, sql, params, None, many)


def _inline_sqlite(engine: AsyncEngine) -> Engine:
    """A synchronous engine on the same SQLite file, for transactions on the loop's thread."""
    sync = create_engine(engine.url.set(drivername="sqlite"))
    event.listen(sync, "connect", sqlite_pragmas)
    event.listen(sync, "connect", _short_busy_wait)
    return sync


def _short_busy_wait(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(f"PRAGMA busy_timeout={_SQLITE_WAIT_MS}")
    finally:
        cursor.close()


def _settle(
    done: asyncio.Future[Any], *, result: Any = None, error: Exception | None = None
) -> None:
    if done.done():  # the caller was cancelled
        return
    if error is not None:
        done.set_exception(error)
    else:
        done.set_result(result)
