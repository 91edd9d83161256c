"""The run path's group commit on SQLite and Postgres: shared transactions, isolated failures,
and (SQLite) a lock held elsewhere waited out without stalling the event loop."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable

import pytest
from sqlalchemy import Connection, bindparam, text, update
from sqlalchemy.ext.asyncio import AsyncEngine

from bus.errors import StoreError
from bus.store.group_commit import Prepared, for_engine
from bus.store.scope import Scope, apply_scope_sync
from bus.store.tables import RunRow


async def test_concurrent_units_share_transactions_and_all_commit(
    engine: AsyncEngine, superuser_engine: AsyncEngine
) -> None:
    group = for_engine(engine)
    assert for_engine(engine) is group  # one per engine: repositories share it
    transactions: list[int] = []

    def unit(n: int) -> Callable[[Connection], int]:
        def work(conn: Connection) -> int:
            transactions.append(id(conn))
            apply_scope_sync(conn, Scope.tenant(f"t{n}"))  # Postgres: the row's tenant
            conn.execute(
                text(
                    "INSERT INTO tenant_settings (tenant_id, settings, updated_at, updated_by) "
                    "VALUES (:t, '{}', CURRENT_TIMESTAMP, 'test')"
                ),
                {"t": f"t{n}"},
            )
            return n

        return work

    results = await asyncio.gather(*(group.run(unit(n), "insert") for n in range(40)))
    assert results == list(range(40))
    assert len(set(transactions)) < 40  # several units rode in one transaction
    async with superuser_engine.connect() as conn:
        count = (await conn.execute(text("SELECT count(*) FROM tenant_settings"))).scalar()
    assert count == 40


async def test_a_failing_unit_fails_only_its_own_caller(engine: AsyncEngine) -> None:
    group = for_engine(engine)

    def insert(tenant: str) -> Callable[[Connection], str]:
        def work(conn: Connection) -> str:
            apply_scope_sync(conn, Scope.tenant(tenant))
            conn.execute(
                text(
                    "INSERT INTO tenant_settings (tenant_id, settings, updated_at, updated_by) "
                    "VALUES (:t, '{}', CURRENT_TIMESTAMP, 'test')"
                ),
                {"t": tenant},
            )
            return tenant

        return work

    outcomes = await asyncio.gather(
        group.run(insert("a"), "insert a"),
        group.run(insert("a"), "insert a again"),  # primary key taken: this one fails
        group.run(insert("b"), "insert b"),
        return_exceptions=True,
    )
    assert outcomes[0] == "a" and outcomes[2] == "b"
    assert isinstance(outcomes[1], StoreError) and "insert a again" in str(outcomes[1])


def _through_sqlalchemy(conn: Connection) -> str:
    conn.execute(text("DELETE FROM tenant_settings"))
    return "written"


# The run path's statements (`Prepared`) run on the driver's cursor: a lock is waited out
# the same way (the driver's error is SQLAlchemy's OperationalError).
_PREPARED = Prepared(update(RunRow).where(RunRow.id == bindparam("id")).values(answer="x"))


def _prepared(conn: Connection) -> str:
    _PREPARED.rowcount(conn, {"id": "no-such-run"})
    return "written"


# SQLite's single write lock: no Postgres case is generated.
@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize("work", [_through_sqlalchemy, _prepared], ids=["sqlalchemy", "prepared"])
async def test_sqlite_lock_held_by_another_connection_is_waited_out_off_the_loop(
    engine: AsyncEngine, store_url: str, work: Callable[[Connection], str]
) -> None:
    group = for_engine(engine)
    path = store_url.removeprefix("sqlite+aiosqlite:///")
    locked, release = threading.Event(), threading.Event()

    def hold_lock() -> None:
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        locked.set()
        release.wait(5)
        other.execute("COMMIT")
        other.close()

    holder = threading.Thread(target=hold_lock)
    holder.start()
    locked.wait(5)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.001)

    tick_task = asyncio.create_task(ticker())
    write = asyncio.create_task(group.run(work, "write while locked"))
    await asyncio.sleep(0.3)
    assert not write.done()  # still waiting for the lock...
    started = time.monotonic()
    release.set()
    assert await write == "written"  # ...and done soon after it was released
    assert time.monotonic() - started < 1.0
    tick_task.cancel()
    holder.join(5)
    assert ticks > 10  # the loop kept running while the write waited (blocked: ~0)
