"""PostgreSQL for the integration tests: a database per session, used as a role bound by RLS.

Postgres is expected at AGENTBUS_TEST_POSTGRES_DSN (default: the local trust-auth server).
When it can't be reached the postgres tests fail, unless AGENTBUS_SKIP_POSTGRES=1 says
skipping is intended; a silently skipped backend would hide a broken adapter.

The store runs as ``postgres_app_role``: a login role that is not a superuser and has no
BYPASSRLS (a superuser bypasses row-level security, so testing as one would prove nothing).
It runs the migrations too, so it owns the tables, as an app's role does in a deployment;
the policies are FORCEd, so the owner is bound by them as well. Tests that must look past
row-level security use the superuser DSN (``postgres_database``).

A test that needs the migrated schema with no rows takes ``postgres_migrated_url``: the
session migrates once, and later tests get the same tables emptied (milliseconds, where
migrating from nothing takes seconds), unless a test left the schema otherwise.
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

from bus.store import upgrade_async

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


#: A schema's shape, one text: columns, indexes, policies, owners, grants, sequences and
#: the alembic revision. Equal texts mean an emptied schema is as good as a migrated one.
SCHEMA_SHAPE = """
SELECT md5(coalesce(string_agg(part, E'\\n' ORDER BY part), '')) FROM (
  SELECT format('column %s.%s %s %s %s', table_name, column_name, data_type, is_nullable,
                column_default) AS part
    FROM information_schema.columns WHERE table_schema = 'public'
  UNION ALL SELECT format('index %s', indexdef) FROM pg_indexes WHERE schemaname = 'public'
  UNION ALL SELECT format('policy %s.%s %s %s %s', tablename, policyname, cmd, qual, with_check)
    FROM pg_policies WHERE schemaname = 'public'
  UNION ALL SELECT format('relation %s %s %s %s %s %s', relname, relkind, relowner::regrole,
                          relrowsecurity, relforcerowsecurity, relacl)
    FROM pg_class WHERE relnamespace = 'public'::regnamespace
  UNION ALL SELECT format('constraint %s %s', conname, pg_get_constraintdef(oid))
    FROM pg_constraint WHERE connamespace = 'public'::regnamespace
  UNION ALL SELECT format('function %s', proname) FROM pg_proc
    WHERE pronamespace = 'public'::regnamespace
  UNION ALL SELECT format('revision %s', version_num) FROM alembic_version
) AS shape
"""
#: Each database's shape right after it was migrated to head (by ``postgres_migrated_url``).
_MIGRATED: dict[str, str] = {}


async def _schema_shape(conn: asyncpg.Connection) -> str | None:
    try:
        return await conn.fetchval(SCHEMA_SHAPE)
    except asyncpg.UndefinedTableError:  # no alembic_version: not migrated
        return None


async def _empty_tables(conn: asyncpg.Connection) -> None:
    """Delete every row but the revision, foreign keys unchecked (a superuser connection:
    row-level security does not hide rows from it), and restart every sequence."""
    tables = await conn.fetch(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public' "
        "AND tablename <> 'alembic_version'"
    )
    async with conn.transaction():
        await conn.execute("SET LOCAL session_replication_role = replica")
        for (table,) in tables:
            await conn.execute(f'DELETE FROM public."{table}"')
        await conn.execute(
            "SELECT setval(s.seqrelid, s.seqstart, false) FROM pg_sequence s "
            "JOIN pg_class c ON c.oid = s.seqrelid WHERE c.relnamespace = 'public'::regnamespace"
        )


async def _migrated_and_empty(database: str, role: str) -> None:
    conn = await asyncpg.connect(database, timeout=5)
    try:
        shape = await _schema_shape(conn)
        if shape is not None and shape == _MIGRATED.get(database):
            await _empty_tables(conn)
            return
        await conn.execute("DROP SCHEMA public CASCADE")
        await conn.execute("CREATE SCHEMA public")
        await conn.execute(f"GRANT ALL ON SCHEMA public TO {role}")
        await upgrade_async(as_asyncpg(database, role))  # as the app role, as a deployment does
        migrated = await _schema_shape(conn)
        assert migrated is not None
        _MIGRATED[database] = migrated
    finally:
        await conn.close()


@pytest.fixture
def postgres_migrated_url(postgres_database: str, postgres_app_role: str) -> str:
    """An asyncpg URL, as the app role, of a schema migrated to head with no rows in it."""
    run_in_thread(lambda: _migrated_and_empty(postgres_database, postgres_app_role))
    return as_asyncpg(postgres_database, postgres_app_role)
