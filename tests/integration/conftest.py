"""PostgreSQL for the integration tests: a database per session, used as a role bound by RLS.

Postgres is expected at AGENTBUS_TEST_POSTGRES_DSN (default: the local trust-auth server).
When it can't be reached the postgres tests fail, unless AGENTBUS_SKIP_POSTGRES=1 says
skipping is intended; a silently skipped backend would hide a broken adapter.

The store runs as ``postgres_app_role``: a login role that is not a superuser and has no
BYPASSRLS (a superuser bypasses row-level security, so testing as one would prove nothing).
It runs the migrations too, so it owns the tables, as an app's role does in a deployment;
the policies are FORCEd, so the owner is bound by them as well. Tests that must look past
row-level security use the superuser DSN (``postgres_database``).
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import asyncpg
import pytest

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


async def pg_execute(dsn: str, *statements: str) -> None:
    """Run statements on a fresh asyncpg connection (no SQLAlchemy, no scope)."""
    conn = await asyncpg.connect(dsn, timeout=5)
    try:
        for statement in statements:
            await conn.execute(statement)
    finally:
        await conn.close()


def as_asyncpg(dsn: str, user: str | None = None) -> str:
    """The SQLAlchemy asyncpg URL of a libpq DSN, optionally as another user."""
    url = dsn.replace("postgresql://", "postgresql+asyncpg://", 1)
    if user is not None:
        scheme, rest = url.split("://", 1)
        url = f"{scheme}://{user}@{rest.split('@', 1)[-1]}"
    return url


@pytest.fixture(scope="session")
def _postgres() -> Iterator[tuple[str, str]]:
    """A fresh database and app role for this test session, dropped at the end."""
    name = f"agentbus_test_{uuid.uuid4().hex[:12]}"
    role = f"agentbus_app_{uuid.uuid4().hex[:12]}"
    try:
        run_in_thread(
            lambda: pg_execute(
                PG_ADMIN_DSN,
                f"CREATE ROLE {role} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEROLE",
                f'CREATE DATABASE "{name}"',
            )
        )
    except (OSError, asyncpg.PostgresError) as e:
        problem = f"PostgreSQL is not usable at {PG_ADMIN_DSN}: {e!r}"
        if os.environ.get("AGENTBUS_SKIP_POSTGRES") == "1":
            pytest.skip(f"{problem} (AGENTBUS_SKIP_POSTGRES=1)")
        pytest.fail(
            f"{problem}. Start it, point AGENTBUS_TEST_POSTGRES_DSN at a server where user "
            "postgres may CREATE DATABASE and ROLE, or set AGENTBUS_SKIP_POSTGRES=1 to skip "
            "these tests.",
            pytrace=False,
        )
    dsn = PG_ADMIN_DSN.rsplit("/", 1)[0] + f"/{name}"
    try:
        yield dsn, role
    finally:
        # The database first: the role owns what the tests created in it.
        run_in_thread(
            lambda: pg_execute(
                PG_ADMIN_DSN, f'DROP DATABASE "{name}" WITH (FORCE)', f"DROP ROLE IF EXISTS {role}"
            )
        )


@pytest.fixture(scope="session")
def postgres_database(_postgres: tuple[str, str]) -> str:
    """The session's database; its superuser DSN (row-level security does not bind it)."""
    return _postgres[0]


@pytest.fixture(scope="session")
def postgres_app_role(_postgres: tuple[str, str]) -> str:
    """A login role that is neither a superuser nor BYPASSRLS: what the store runs as."""
    return _postgres[1]


@pytest.fixture
def postgres_app_url(postgres_database: str, postgres_app_role: str) -> str:
    """An asyncpg URL, as the app role, of an empty schema it may create tables in."""
    role = postgres_app_role
    # One database per session, emptied per test: cheaper than CREATE DATABASE each time.
    run_in_thread(
        lambda: pg_execute(
            postgres_database,
            "DROP SCHEMA public CASCADE",
            "CREATE SCHEMA public",
            f"GRANT ALL ON SCHEMA public TO {role}",
        )
    )
    return as_asyncpg(postgres_database, role)
