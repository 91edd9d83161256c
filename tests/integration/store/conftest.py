"""Fixtures for the state-store conformance suite: every test runs on SQLite and Postgres.

Postgres is expected at AGENTBUS_TEST_POSTGRES_DSN (default: the local trust-auth server).
When it can't be reached the postgres tests fail, unless AGENTBUS_SKIP_POSTGRES=1 says
skipping is intended; a silently skipped backend would hide a broken adapter.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import asyncpg
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from bus.store import ConversationStore, RunStore, make_engine, upgrade_async

PG_ADMIN_DSN = os.environ.get(
    "AGENTBUS_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test"
)
T = TypeVar("T")


def run_in_thread(make_coro: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to completion on a private loop in another thread.

    Sync fixtures use this so they never create, set or close an event loop in the thread
    where pytest-asyncio runs the tests.
    """

    async def main() -> T:
        return await make_coro()

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, main()).result()


async def _execute(dsn: str, *statements: str) -> None:
    conn = await asyncpg.connect(dsn, timeout=5)
    try:
        for statement in statements:
            await conn.execute(statement)
    finally:
        await conn.close()


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    """A fresh database for this test session, dropped at the end; yields its DSN."""
    name = f"agentbus_test_{uuid.uuid4().hex[:12]}"
    try:
        run_in_thread(lambda: _execute(PG_ADMIN_DSN, f'CREATE DATABASE "{name}"'))
    except (OSError, asyncpg.PostgresError) as e:
        problem = f"PostgreSQL is not usable at {PG_ADMIN_DSN}: {e!r}"
        if os.environ.get("AGENTBUS_SKIP_POSTGRES") == "1":
            pytest.skip(f"{problem} (AGENTBUS_SKIP_POSTGRES=1)")
        pytest.fail(
            f"{problem}. Start it, point AGENTBUS_TEST_POSTGRES_DSN at a server where user "
            "postgres may CREATE DATABASE, or set AGENTBUS_SKIP_POSTGRES=1 to skip these tests.",
            pytrace=False,
        )
    dsn = PG_ADMIN_DSN.rsplit("/", 1)[0] + f"/{name}"
    try:
        yield dsn
    finally:
        run_in_thread(lambda: _execute(PG_ADMIN_DSN, f'DROP DATABASE "{name}" WITH (FORCE)'))


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An async URL of an empty database, once per backend."""
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
    dsn: str = request.getfixturevalue("postgres_database")
    # One database per session, emptied per test: cheaper than CREATE DATABASE each time.
    run_in_thread(lambda: _execute(dsn, "DROP SCHEMA public CASCADE", "CREATE SCHEMA public"))
    return dsn.replace("postgresql://", "postgresql+asyncpg://", 1)


@pytest.fixture
async def engine(store_url: str) -> AsyncIterator[AsyncEngine]:
    """An engine on a migrated, empty database; disposed afterwards."""
    await upgrade_async(store_url)
    engine = make_engine(store_url)
    try:
        yield engine
    finally:
        await engine.dispose()


@pytest.fixture
def store(engine: AsyncEngine) -> RunStore:
    """A RunStore on a migrated, empty database."""
    return RunStore(engine)


@pytest.fixture
def conversations(engine: AsyncEngine) -> ConversationStore:
    """A ConversationStore on the same database as ``store``."""
    return ConversationStore(engine)
