"""Group commit: writes that arrive while a transaction is in flight share the next one.

A caller still returns only once its write is committed. At concurrency 1 nothing changes;
under load one transaction carries many callers' writes, which is what keeps SQLite (one
writer at a time) and a small Postgres from being the bottleneck of the run path.

Units of work run in arrival order on one Core connection (no ORM session: the hot path
pays for neither identity maps nor ORM compilation). When a batch fails, each of its units
is retried in a transaction of its own, so one bad write fails only its own caller.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from bus.errors import StoreError
from bus.store.engine import safe_url

T = TypeVar("T")
Work = Callable[[AsyncConnection], Awaitable[Any]]


class GroupCommit:
    """Runs units of work against ``engine``, many to a transaction.

    Args:
        engine: the database; the caller owns it and disposes of it.
        max_batch: the most units one transaction carries.
    """

    def __init__(self, engine: AsyncEngine, *, max_batch: int = 128) -> None:
        self._engine = engine
        self._max_batch = max_batch
        self._queue: list[tuple[Work, str, asyncio.Future[Any]]] = []
        self._flusher: asyncio.Task[None] | None = None
        self._where = safe_url(engine.url)

    @property
    def dialect(self) -> str:
        """The database's SQL dialect (``sqlite`` or ``postgresql``)."""
        return self._engine.dialect.name

    async def run(self, work: Callable[[AsyncConnection], Awaitable[T]], action: str) -> T:
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
        async with self._engine.begin() as conn:
            return [await unit(conn) for unit in units]

    def _error(self, e: Exception, action: str) -> Exception:
        if isinstance(e, StoreError) or not isinstance(e, SQLAlchemyError | OSError):
            return e
        # DBAPIError's own text repeats the SQL and its parameters (user questions).
        cause = e.orig if isinstance(e, DBAPIError) else e
        error = StoreError(f"could not {action} in {self._where}: {cause}")
        error.__cause__ = e
        return error


def _settle(
    done: asyncio.Future[Any], *, result: Any = None, error: Exception | None = None
) -> None:
    if done.done():  # the caller was cancelled
        return
    if error is not None:
        done.set_exception(error)
    else:
        done.set_result(result)
