"""Migrations: upgrade, re-upgrade and downgrade on SQLite and Postgres, all through code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection

from bus.errors import StoreError
from bus.store import RunRecord, RunStore, downgrade, make_engine, upgrade, upgrade_async
from bus.store.migrate import downgrade_async
from bus.store.tables import Base


def _read_schema(conn: Connection) -> dict[str, Any]:
    insp = inspect(conn)
    tables = set(insp.get_table_names())
    version = None
    if "alembic_version" in tables:
        version = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    indexes = {ix["name"] for ix in insp.get_indexes("runs")} if "runs" in tables else set()
    return {"tables": tables, "version": version, "indexes": indexes}


async def schema_of(url: str) -> dict[str, Any]:
    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(_read_schema)
    finally:
        await engine.dispose()


async def test_upgrade_on_an_empty_database_creates_the_runs_table(store_url: str) -> None:
    assert "runs" not in (await schema_of(store_url))["tables"]

    await upgrade_async(store_url)

    schema = await schema_of(store_url)
    assert {"runs", "alembic_version"} <= schema["tables"]
    assert schema["version"] == "0001"
    assert "ix_runs_tenant_id_created_at" in schema["indexes"]


async def test_the_migrated_schema_matches_the_models(store_url: str) -> None:
    await upgrade_async(store_url)
    engine = make_engine(store_url)
    try:
        async with engine.connect() as conn:
            diff = await conn.run_sync(
                lambda sync: compare_metadata(
                    MigrationContext.configure(sync, opts={"compare_type": True}),
                    Base.metadata,
                )
            )
    finally:
        await engine.dispose()
    assert diff == []


async def test_upgrading_twice_is_a_no_op_that_keeps_data(store_url: str) -> None:
    await upgrade_async(store_url)
    engine = make_engine(store_url)
    try:
        store = RunStore(engine)
        run = await store.create(
            RunRecord(id="r1", tenant_id="t", subject="s", mode="single", question="q")
        )

        await upgrade_async(store_url)

        assert await store.get("t", "r1") == run
    finally:
        await engine.dispose()
    assert (await schema_of(store_url))["version"] == "0001"


async def test_downgrade_to_base_drops_the_table_and_upgrade_restores_it(store_url: str) -> None:
    await upgrade_async(store_url)

    await downgrade_async(store_url, "base")

    schema = await schema_of(store_url)
    assert "runs" not in schema["tables"]
    assert schema["version"] is None

    await upgrade_async(store_url)
    assert "runs" in (await schema_of(store_url))["tables"]


def test_the_sync_functions_work_outside_an_event_loop(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'sync.db'}"

    upgrade(url)
    upgrade(url)
    downgrade(url, "base")


async def test_the_sync_upgrade_refuses_to_block_an_event_loop(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match=r"_async variant"):
        upgrade(f"sqlite+aiosqlite:///{tmp_path / 'x.db'}")


async def test_upgrade_creates_the_sqlite_folder_and_turns_on_wal(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'not' / 'yet' / 'store.db'}"

    await upgrade_async(url)

    assert (tmp_path / "not" / "yet" / "store.db").is_file()
    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            pragmas = [
                (await conn.execute(text(f"PRAGMA {name}"))).scalar()
                for name in ("journal_mode", "busy_timeout", "foreign_keys")
            ]
    finally:
        await engine.dispose()
    assert pragmas == ["wal", 5000, 1]


async def test_upgrade_of_an_unreachable_database_raises_store_error() -> None:
    with pytest.raises(StoreError, match=r"127\.0\.0\.1:1") as caught:
        await upgrade_async("postgresql+asyncpg://postgres@127.0.0.1:1/nowhere")
    assert isinstance(caught.value.__cause__, OSError)


async def test_an_unknown_revision_raises_store_error(store_url: str) -> None:
    with pytest.raises(StoreError, match="no-such-revision"):
        await upgrade_async(store_url, "no-such-revision")
