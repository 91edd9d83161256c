"""Fixtures for the state-store conformance suite: every test runs on SQLite and Postgres.

On Postgres the store runs as a role bound by row-level security (see
``tests/integration/conftest.py``), so every test also shows the store sets its scope on
each transaction; ``superuser_engine`` looks past the policies where a test must.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from bus.store import ConversationStore, RunStore, make_engine, upgrade_async
from tests.integration.conftest import as_asyncpg, run_in_thread


@pytest.fixture(scope="session")
def sqlite_migrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file migrated to head, once per session: tests get a copy of it."""
    path = tmp_path_factory.mktemp("sqlite-head") / "store.db"
    run_in_thread(lambda: upgrade_async(f"sqlite+aiosqlite:///{path}"))
    return path


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An async URL of a database, once per backend (Postgres: as the app role).

    Empty for a test of migrations; for a test that takes ``engine``, already migrated to
    head with no rows (a copy of a migrated SQLite file, the Postgres schema emptied), so
    ``engine``'s upgrade finds nothing to do. Either way the test sees what a fresh
    migration would leave.
    """
    migrated = "engine" in request.fixturenames
    if request.param == "sqlite":
        path = tmp_path / "store.db"
        if migrated:
            shutil.copyfile(request.getfixturevalue("sqlite_migrated"), path)
        return f"sqlite+aiosqlite:///{path}"
    url: str = request.getfixturevalue("postgres_migrated_url" if migrated else "postgres_app_url")
    return url


@pytest.fixture
def superuser_url(store_url: str, request: pytest.FixtureRequest) -> str:
    """The same database as ``store_url``, as a user row-level security does not bind."""
    if store_url.startswith("sqlite"):
        return store_url
    return as_asyncpg(request.getfixturevalue("postgres_database"))


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
async def superuser_engine(engine: AsyncEngine, superuser_url: str) -> AsyncIterator[AsyncEngine]:
    """An engine on ``engine``'s database that row-level security does not bind."""
    if superuser_url.startswith("sqlite"):
        yield engine
        return
    other = make_engine(superuser_url)
    try:
        yield other
    finally:
        await other.dispose()


@pytest.fixture
def store(engine: AsyncEngine) -> RunStore:
    """A RunStore on a migrated, empty database."""
    return RunStore(engine)


@pytest.fixture
def conversations(engine: AsyncEngine) -> ConversationStore:
    """A ConversationStore on the same database as ``store``."""
    return ConversationStore(engine)
