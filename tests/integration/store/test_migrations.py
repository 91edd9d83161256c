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
from bus.store import (
    ApiKeyStore,
    AuditEntry,
    AuditStore,
    ConversationStore,
    MessageRole,
    RetentionStore,
    RunRecord,
    RunStore,
    Scope,
    TenantSettingsStore,
    downgrade,
    make_engine,
    upgrade,
    upgrade_async,
)
from bus.store.migrate import downgrade_async
from bus.store.repository import utcnow
from bus.store.tables import Base

HEAD = "0023"  # the newest revision
BASELINE = "0001"
OWNER = Scope.user("t", "s")


def _read_schema(conn: Connection) -> dict[str, Any]:
    insp = inspect(conn)
    tables = set(insp.get_table_names())
    version = None
    if "alembic_version" in tables:
        version = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    indexes = {ix["name"] for table in tables for ix in insp.get_indexes(table)}
    run_columns = {c["name"] for c in insp.get_columns("runs")} if "runs" in tables else set()
    return {"tables": tables, "version": version, "indexes": indexes, "run_columns": run_columns}


async def schema_of(url: str) -> dict[str, Any]:
    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(_read_schema)
    finally:
        await engine.dispose()


async def test_upgrade_on_an_empty_database_creates_every_table(store_url: str) -> None:
    assert "runs" not in (await schema_of(store_url))["tables"]

    await upgrade_async(store_url)

    schema = await schema_of(store_url)
    assert {"runs", "conversations", "messages", "alembic_version"} <= schema["tables"]
    assert schema["version"] == HEAD
    assert {
        "ix_runs_tenant_id_created_at",
        "ix_conversations_tenant_id_updated_at",
        "ix_messages_conversation_id_id",
    } <= schema["indexes"]
    assert {"conversation_id", "trace", "usage", "verified", "verified_reason"} <= schema[
        "run_columns"
    ]


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

        assert await store.get(OWNER, "r1") == run
    finally:
        await engine.dispose()
    assert (await schema_of(store_url))["version"] == HEAD


async def test_downgrade_to_base_drops_the_table_and_upgrade_restores_it(store_url: str) -> None:
    await upgrade_async(store_url)

    await downgrade_async(store_url, "base")

    schema = await schema_of(store_url)
    assert "runs" not in schema["tables"]
    assert schema["version"] is None

    await upgrade_async(store_url)
    assert "runs" in (await schema_of(store_url))["tables"]


async def test_0002_upgrades_a_baseline_database_and_keeps_its_runs(store_url: str) -> None:
    await upgrade_async(store_url, BASELINE)
    await _insert_baseline_run(store_url)

    await upgrade_async(store_url)

    engine = make_engine(store_url)
    try:
        run = await RunStore(engine).get(OWNER, "r1")
    finally:
        await engine.dispose()
    assert run is not None and run.question == "q"
    assert (run.conversation_id, run.trace, run.usage) == (None, None, None)


async def test_0002_downgrades_to_the_baseline_and_back(store_url: str) -> None:
    await upgrade_async(store_url)
    engine = make_engine(store_url)
    try:
        await RunStore(engine).create(
            RunRecord(
                id="r1",
                tenant_id="t",
                subject="s",
                mode="single",
                question="q",
                conversation_id="c1",
                trace=[{"kind": "answer", "text": "a"}],
                usage={"input_tokens": 3},
            )
        )
        conversations = ConversationStore(engine)
        await conversations.ensure(OWNER, "c1", "q")
        await conversations.append(OWNER, "c1", MessageRole.USER, "q", "r1")
    finally:
        await engine.dispose()

    await downgrade_async(store_url, BASELINE)

    schema = await schema_of(store_url)
    assert schema["version"] == BASELINE
    assert {"conversations", "messages"}.isdisjoint(schema["tables"])
    assert {"conversation_id", "trace", "usage"}.isdisjoint(schema["run_columns"])
    assert "ix_runs_tenant_id_created_at" in schema["indexes"]
    assert await _baseline_run_ids(store_url) == ["r1"]

    await upgrade_async(store_url)

    schema = await schema_of(store_url)
    assert schema["version"] == HEAD
    assert {"conversations", "messages"} <= schema["tables"]
    engine = make_engine(store_url)
    try:
        run = await RunStore(engine).get(OWNER, "r1")
    finally:
        await engine.dispose()
    assert run is not None and run.trace is None


async def test_0008_gives_existing_keys_no_groups(store_url: str) -> None:
    await upgrade_async(store_url, "0007")
    engine = make_engine(store_url)
    try:
        async with engine.begin() as conn:
            await conn.execute(
                text(
                    "INSERT INTO api_keys (id, key_hash, tenant_id, subject, role, created_at)"
                    f" VALUES ('k1', '{'0' * 64}', 't', 's', 'user', CURRENT_TIMESTAMP)"
                )
            )

        await upgrade_async(store_url)

        key = await ApiKeyStore(engine).get("k1")
    finally:
        await engine.dispose()
    assert key is not None and key.groups == ()


async def test_0014_makes_each_existing_conversation_one_line(store_url: str) -> None:
    await upgrade_async(store_url, "0013")
    engine = make_engine(store_url)
    try:
        async with engine.begin() as conn:
            if conn.dialect.name == "postgresql":  # past row-level security, as an operator
                await conn.execute(text("SELECT set_config('app.all_tenants', 'on', true)"))
            await conn.execute(
                text(
                    "INSERT INTO conversations (id, tenant_id, subject, created_at, updated_at)"
                    " VALUES ('c1', 't', 's', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"
                )
            )
            for n, role in enumerate(["user", "assistant", "user", "assistant"], start=1):
                await conn.execute(
                    text(
                        "INSERT INTO messages (id, conversation_id, tenant_id, run_id, role,"
                        f" content, created_at) VALUES ({n}, 'c1', 't', 'r{(n + 1) // 2}',"
                        f" '{role}', 'm{n}', CURRENT_TIMESTAMP)"
                    )
                )

        await upgrade_async(store_url)

        conversations = ConversationStore(engine)
        line = await conversations.history(OWNER, "c1")
        found = await conversations.get(OWNER, "c1")
    finally:
        await engine.dispose()
    assert [(m.id, m.parent_id) for m in line] == [(1, None), (2, 1), (3, 2), (4, 3)]
    assert found is not None and found.active_message_id == 4


async def test_0017_keeps_the_audit_chain_and_its_downgrade_drops_the_anchors(
    store_url: str,
) -> None:
    await upgrade_async(store_url, "0016")
    await upgrade_async(store_url)  # onto a 0016 database
    engine = make_engine(store_url)
    try:
        audit = AuditStore(engine)
        for n in range(3):
            await audit.append(
                AuditEntry(
                    tenant_id="t",
                    subject="s",
                    run_id=f"r{n}",
                    agent="researcher",
                    call_id=f"c{n}",
                    tool="calculator",
                    status="ok",
                    code="ok",
                    duration_ms=1.0,
                )
            )
        rows_before = (await audit.verify("t")).chains[0].rows
        assert await RetentionStore(engine).prune_audit("t", utcnow(), limit=2) == 2
        pruned = (await audit.verify("t")).chains[0]
        await downgrade_async(store_url, "0016")
        schema = await schema_of(store_url)
        await upgrade_async(store_url)
        unanchored = (await audit.verify("t")).chains[0]
    finally:
        await engine.dispose()
    assert rows_before == 3 and pruned.ok and pruned.anchor_seq == 2
    assert "audit_anchors" not in schema["tables"]
    # Without its anchor the pruned chain no longer verifies from seq 1: the downgrade
    # warns of exactly this.
    assert unanchored.broken is not None and unanchored.broken.seq == 3


async def test_0021_gives_every_existing_tenant_every_served_model_and_new_ones_none(
    store_url: str,
) -> None:
    await upgrade_async(store_url, "0020")
    engine = make_engine(store_url)
    settings = TenantSettingsStore(engine)
    try:
        async with engine.begin() as conn:
            if conn.dialect.name == "postgresql":  # past row-level security, as an operator
                await conn.execute(text("SELECT set_config('app.all_tenants', 'on', true)"))
            for n, tenant in enumerate(["keyed", "listed", "kept"]):
                await conn.execute(
                    text(
                        "INSERT INTO api_keys (id, key_hash, tenant_id, subject, role, created_at)"
                        f" VALUES ('k{n}', '{str(n) * 64}', '{tenant}', 's', 'user',"
                        " CURRENT_TIMESTAMP)"
                    )
                )
            await conn.execute(  # tenant "t": runs, never a key or settings
                text(
                    "INSERT INTO runs (id, tenant_id, subject, status, mode, question,"
                    " created_at, updated_at) VALUES ('r1', 't', 's', 'done', 'single', 'q',"
                    " CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"
                )
            )
        await settings.put("listed", {"model": "m"}, updated_by="root")
        await settings.put("kept", {"user_models": ["m-small"]}, updated_by="root")

        await upgrade_async(store_url)
        after = {t: await settings.get(t) for t in ("keyed", "listed", "kept", "t", "new")}
        await downgrade_async(store_url, "0020")
        undone = {t: await settings.get(t) for t in ("keyed", "listed", "kept")}
    finally:
        await engine.dispose()
    got = {t: None if r is None else r.settings for t, r in after.items()}
    assert got == {
        "keyed": {"user_models": ["*"]},
        "listed": {"model": "m", "user_models": ["*"]},
        "kept": {"user_models": ["m-small"]},  # an admin's choice is left alone
        "t": {"user_models": ["*"]},
        "new": None,  # a tenant from after the upgrade: its users get the tenant's model
    }
    assert undone["keyed"] is None
    assert undone["listed"] is not None and undone["listed"].settings == {"model": "m"}
    assert undone["kept"] is not None and undone["kept"].settings == {"user_models": ["m-small"]}


async def test_0022_vouches_for_redactions_made_before_and_not_for_a_forgery(
    store_url: str, superuser_url: str
) -> None:
    await upgrade_async(store_url, "0021")
    engine = make_engine(store_url)
    operator = make_engine(superuser_url)  # past row-level security, as a table writer
    audit = AuditStore(engine)
    try:
        for tenant in ("t", "f"):
            for n in range(3):
                await audit.append(
                    AuditEntry(
                        tenant_id=tenant,
                        subject="alice",
                        run_id=f"r{n}",
                        agent="researcher",
                        call_id=f"c{n}",
                        tool="calculator",
                        args={"x": n},
                        status="ok",
                        code="ok",
                        duration_ms=1.0,
                    )
                )
        async with operator.begin() as conn:  # what an erasure before 0022 left
            await conn.execute(
                text(
                    "UPDATE audit_log SET subject = '[erased]', run_id = '', call_id = '',"
                    " args = '\"[erased]\"', message = '[erased]', blocked_host = NULL,"
                    " redacted_at = CURRENT_TIMESTAMP WHERE seq IN (1, 3)"
                )
            )
            # A forgery before the upgrade: rewritten, marked redacted, not the marker.
            await conn.execute(
                text(
                    "UPDATE audit_log SET message = 'rewritten', redacted_at = CURRENT_TIMESTAMP"
                    " WHERE tenant_id = 'f' AND seq = 2"
                )
            )
        unvouched = (await audit.verify("t")).chains[0]

        await upgrade_async(store_url)
        report = {c.tenant_id: c for c in (await audit.verify()).chains}
        await downgrade_async(store_url, "0021")
        after_downgrade = {c.tenant_id: c for c in (await audit.verify()).chains}
    finally:
        await engine.dispose()
        await operator.dispose()
    assert unvouched.broken is not None and unvouched.broken.seq == 1
    assert report["t"].ok and (report["t"].rows, report["t"].redacted) == (4, 2)
    broken = report["f"].broken
    assert broken is not None and broken.seq == 2 and "no redaction record" in broken.reason
    assert after_downgrade["t"].ok  # the records stay: they are links of the chain


async def _insert_baseline_run(url: str) -> None:
    # Raw SQL with the baseline's columns only: the models already describe the head schema.
    engine = make_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.execute(
                text(
                    "INSERT INTO runs (id, tenant_id, subject, status, mode, question,"
                    " created_at, updated_at) VALUES ('r1', 't', 's', 'queued', 'single', 'q',"
                    " CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"
                )
            )
    finally:
        await engine.dispose()


async def _baseline_run_ids(url: str) -> list[str]:
    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            return list((await conn.execute(text("SELECT id FROM runs"))).scalars())
    finally:
        await engine.dispose()


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
