"""Migrations in a rollout: workers wait for the head, concurrent upgrades serialize, and the
application's Postgres role gets rows, not ownership."""

from __future__ import annotations

import asyncio
import sys
import uuid

import asyncpg
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from bus.errors import StoreError
from bus.store.migrate import current_revision, head_revision, upgrade_async, wait_for_head


async def test_wait_for_head_times_out_before_the_migration_and_returns_after(
    store_url: str,
) -> None:
    with pytest.raises(StoreError, match="agentbus db upgrade"):
        await wait_for_head(store_url, timeout_s=0.2, poll_s=0.05)
    await upgrade_async(store_url)
    assert await wait_for_head(store_url, timeout_s=1) == head_revision()


async def test_a_worker_starts_on_a_later_release_s_schema_but_not_an_unknown_one(
    store_url: str, superuser_url: str
) -> None:
    await upgrade_async(store_url)
    later = f"{int(head_revision()) + 1:04d}"  # what the next release's migration stamps
    await _stamp(superuser_url, later)
    assert await wait_for_head(store_url, timeout_s=1) == later
    await _stamp(superuser_url, "0001")  # behind this code: it waits for the migration
    with pytest.raises(StoreError, match="'0001'"):
        await wait_for_head(store_url, timeout_s=0.2, poll_s=0.05)


async def _stamp(url: str, revision: str) -> None:
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.execute(text("UPDATE alembic_version SET version_num = :v"), {"v": revision})
    finally:
        await engine.dispose()


async def test_a_worker_waiting_starts_once_the_migration_lands(store_url: str) -> None:
    waiting = asyncio.create_task(wait_for_head(store_url, timeout_s=30, poll_s=0.05))
    await asyncio.sleep(0.2)
    assert not waiting.done()
    await upgrade_async(store_url)
    assert await asyncio.wait_for(waiting, 10) == head_revision()


@pytest.mark.postgres
async def test_concurrent_upgrades_wait_for_each_other(postgres_database: str) -> None:
    # Without the advisory lock, both would CREATE the same tables and one would fail.
    admin = postgres_database
    await _run(admin, "DROP SCHEMA public CASCADE", "CREATE SCHEMA public")
    url = admin.replace("postgresql://", "postgresql+asyncpg://", 1)
    # Separate processes, as in a rollout (alembic's context is one per process).
    code = "import sys; from bus.store.migrate import upgrade; upgrade(sys.argv[1])"
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable, "-c", code, url, stderr=asyncio.subprocess.PIPE
        )
        for _ in range(3)
    ]
    results = [await p.communicate() for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [err.decode()[-500:] for _, err in results]
    assert await current_revision(url) == head_revision()


@pytest.mark.postgres
async def test_the_app_role_gets_rows_but_not_the_schema(postgres_database: str) -> None:
    admin = postgres_database
    role = f"agentbus_app_{uuid.uuid4().hex[:8]}"
    await _run(admin, "DROP SCHEMA public CASCADE", "CREATE SCHEMA public")
    await _run(admin, f"CREATE ROLE {role} LOGIN NOSUPERUSER NOBYPASSRLS")
    try:
        url = admin.replace("postgresql://", "postgresql+asyncpg://", 1)
        await upgrade_async(url, grant_to=role)
        as_app = admin.replace("postgresql://postgres@", f"postgresql://{role}@", 1)
        conn = await asyncpg.connect(as_app)
        try:
            assert await conn.fetchval("SELECT count(*) FROM runs") == 0
            assert await conn.fetchval("SELECT version_num FROM alembic_version")
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await conn.execute("UPDATE alembic_version SET version_num = 'x'")
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await conn.execute("DROP TABLE runs")
        finally:
            await conn.close()
    finally:
        await _run(admin, "DROP SCHEMA public CASCADE", "CREATE SCHEMA public")
        await _run(admin, f"DROP ROLE {role}")


# Grants are a Postgres feature (SQLite ignores grant_to): no SQLite case is generated.
@pytest.mark.parametrize("store_url", ["postgres"], indirect=True)
async def test_grant_to_refuses_a_role_name_that_is_not_one(store_url: str) -> None:
    with pytest.raises(StoreError):
        await upgrade_async(store_url, grant_to='x"; DROP TABLE runs; --')


async def _run(dsn: str, *statements: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        for statement in statements:
            await conn.execute(statement)
    finally:
        await conn.close()
