"""Row-level security on Postgres: a query without the store's scope settings sees nothing.

The suite's ``engine`` connects as a role that is neither a superuser nor BYPASSRLS and
owns the tables (it ran the migrations; the policies are FORCEd), so these raw queries are
bound exactly as the store's own are.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from bus.store import (
    AuditEntry,
    AuditStore,
    CheckpointRecord,
    CheckpointStore,
    ConversationStore,
    MessageRole,
    RetentionStore,
    RunRecord,
    RunStore,
    Scope,
    TenantSettingsStore,
    make_engine,
)
from bus.store.checkpoints import GateReason
from bus.store.migrate import downgrade_async, upgrade_async
from bus.store.repository import utcnow
from bus.store.scope import set_statement

pytestmark = pytest.mark.parametrize(
    "store_url", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)
ALICE = Scope.user("t1", "alice")
BOB = Scope.user("t1", "bob")
OTHER = Scope.user("t2", "alice")
T0 = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)
OWNED = ("runs", "conversations", "checkpoints", "audit_log")
TENANT_ONLY = ("audit_heads", "tenant_settings")
EVERY_TABLE = (*OWNED, "messages", *TENANT_ONLY)


async def seed(engine: AsyncEngine) -> None:
    """One run, conversation, message, gate and audit row each for alice, bob and t2."""
    runs, conversations = RunStore(engine), ConversationStore(engine)
    gates, audit = CheckpointStore(engine), AuditStore(engine)
    for scope in (ALICE, BOB, OTHER):
        who = f"{scope.tenant_id}-{scope.subject}"
        await runs.create(
            RunRecord(
                id=f"run-{who}",
                tenant_id=scope.tenant_id,
                subject=scope.subject,
                mode="single",
                question=f"secret of {who}",
                conversation_id=f"conv-{who}",
            )
        )
        await conversations.ensure(scope, f"conv-{who}", f"secret of {who}")
        await conversations.append(scope, f"conv-{who}", MessageRole.USER, "hi", f"run-{who}")
        await gates.create(
            CheckpointRecord(
                id=f"gate-{who}",
                run_id=f"run-{who}",
                tenant_id=scope.tenant_id,
                subject=scope.subject,
                reason=GateReason.APPROVE_ANSWER,
                step=1,
                state={},
                created_at=T0,
                expires_at=T0 + timedelta(hours=1),
            )
        )
        await audit.append(
            AuditEntry(
                tenant_id=scope.tenant_id,
                subject=scope.subject,
                run_id=f"run-{who}",
                agent="researcher",
                call_id=f"call-{who}",
                tool="calculator",
                status="ok",
                code="ok",
                duration_ms=1.0,
            )
        )
    for tenant in ("t1", "t2"):
        await TenantSettingsStore(engine).put(tenant, {"mode": "single"}, updated_by="root")


async def counts(conn: AsyncConnection) -> dict[str, int]:
    found = {}
    for table in EVERY_TABLE:
        found[table] = int(await conn.scalar(text(f"SELECT count(*) FROM {table}")) or 0)
    return found


async def as_scope(conn: AsyncConnection, scope: Scope | None, **override: str) -> None:
    values = (scope or Scope("", "")).settings() | override
    await conn.execute(set_statement(), values)


async def test_the_store_runs_as_a_role_that_row_level_security_binds(engine: AsyncEngine) -> None:
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                text(
                    "SELECT current_user, rolsuper, rolbypassrls FROM pg_roles"
                    " WHERE rolname = current_user"
                )
            )
        ).one()
        owner = await conn.scalar(text("SELECT tableowner FROM pg_tables WHERE tablename = 'runs'"))
    assert row[0].startswith("agentbus_app_") and (row[1], row[2]) == (False, False)
    assert owner == row[0]  # the owner, and still bound: the policies are FORCEd


async def test_a_query_without_the_scope_sees_nothing(
    engine: AsyncEngine, superuser_engine: AsyncEngine
) -> None:
    await seed(engine)

    async with superuser_engine.connect() as conn:
        everything = await counts(conn)
    async with engine.connect() as conn:
        unscoped = await counts(conn)

    assert everything == {
        "runs": 3,
        "conversations": 3,
        "checkpoints": 3,
        "audit_log": 3,
        "messages": 3,
        "audit_heads": 2,
        "tenant_settings": 2,
    }
    assert unscoped == dict.fromkeys(EVERY_TABLE, 0)


async def test_each_setting_opens_exactly_its_rows(engine: AsyncEngine) -> None:
    await seed(engine)

    async with engine.connect() as conn:
        async with conn.begin():
            await as_scope(conn, Scope("t1", ""))  # a tenant and no user
            tenant_only = await counts(conn)
        async with conn.begin():
            await as_scope(conn, ALICE)
            alice = await counts(conn)
            questions = (await conn.execute(text("SELECT question FROM runs"))).scalars()
            assert list(questions) == ["secret of t1-alice"]
        async with conn.begin():
            await as_scope(conn, Scope.admin("t1", "root"))
            admin = await counts(conn)
        async with conn.begin():
            await as_scope(conn, Scope.operator())
            operator = await counts(conn)
        async with conn.begin():
            # all_subjects without a tenant opens nothing.
            await as_scope(conn, None, all_subjects="on")
            no_tenant = await counts(conn)

    one_tenant = {"audit_heads": 1, "tenant_settings": 1}
    assert tenant_only == dict.fromkeys(EVERY_TABLE, 0) | one_tenant
    assert alice == dict.fromkeys(EVERY_TABLE, 1)
    assert admin == dict.fromkeys((*OWNED, "messages"), 2) | one_tenant
    assert operator == dict.fromkeys((*OWNED, "messages"), 3) | dict.fromkeys(TENANT_ONLY, 2)
    assert no_tenant == dict.fromkeys(EVERY_TABLE, 0)


async def test_writes_outside_the_scope_change_nothing_or_fail(
    engine: AsyncEngine, superuser_engine: AsyncEngine
) -> None:
    await seed(engine)

    async with engine.connect() as conn:
        async with conn.begin():
            await as_scope(conn, ALICE)
            for table in ("runs", "conversations", "checkpoints"):
                result: Any = await conn.execute(
                    text(f"UPDATE {table} SET subject = 'alice' WHERE subject = 'bob'")
                )
                assert result.rowcount == 0
            deleted: Any = await conn.execute(text("DELETE FROM messages"))
            assert deleted.rowcount == 1  # alice's own message only
        with pytest.raises(DBAPIError, match="row-level security"):
            async with conn.begin():
                await as_scope(conn, ALICE)
                await conn.execute(
                    text("UPDATE runs SET subject = 'bob' WHERE id = 'run-t1-alice'")
                )
        with pytest.raises(DBAPIError, match="row-level security"):
            async with conn.begin():
                await as_scope(conn, ALICE)
                await conn.execute(
                    text(
                        "INSERT INTO conversations (id, tenant_id, subject, created_at,"
                        " updated_at) VALUES ('planted', 't1', 'bob', now(), now())"
                    )
                )

    async with superuser_engine.connect() as conn:
        assert await counts(conn) == {
            "runs": 3,
            "conversations": 3,
            "checkpoints": 3,
            "audit_log": 3,
            "messages": 2,
            "audit_heads": 2,
            "tenant_settings": 2,
        }


async def test_0008_turns_security_on_for_every_tenant_table_and_downgrades(
    store_url: str,
) -> None:
    await upgrade_async(store_url)
    assert await security(store_url) == dict.fromkeys(EVERY_TABLE, (True, True, 1))

    await downgrade_async(store_url, "0007")

    after = await security(store_url)
    assert after.pop("checkpoints") == (True, True, 1)  # 0006's own policy is back
    assert after == dict.fromkeys(
        (*OWNED[:2], OWNED[3], "messages", *TENANT_ONLY), (False, False, 0)
    )


async def security(
    url: str, tables: tuple[str, ...] | list[str] = EVERY_TABLE
) -> dict[str, tuple[bool, bool, int]]:
    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            found = {}
            for table in tables:
                flags = (
                    await conn.execute(
                        text(
                            "SELECT relrowsecurity, relforcerowsecurity FROM pg_class"
                            " WHERE relname = :t"
                        ),
                        {"t": table},
                    )
                ).one()
                policies = await conn.scalar(
                    text("SELECT count(*) FROM pg_policies WHERE tablename = :t"), {"t": table}
                )
                found[table] = (bool(flags[0]), bool(flags[1]), int(policies or 0))
            return found
    finally:
        await engine.dispose()


async def test_a_tenants_audit_anchor_is_seen_only_in_its_scope(engine: AsyncEngine) -> None:
    await seed(engine)
    pruned = [await RetentionStore(engine).prune_audit(t, utcnow(), limit=10) for t in ("t1", "t2")]
    assert pruned == [2, 1]  # alice's and bob's rows; t2's one

    async with engine.begin() as conn:
        unscoped = await conn.scalar(text("SELECT count(*) FROM audit_anchors"))
        await as_scope(conn, ALICE)
        seen = list((await conn.execute(text("SELECT tenant_id FROM audit_anchors"))).scalars())
    assert unscoped == 0 and seen == ["t1"]
    url = engine.url.render_as_string(hide_password=False)
    assert await security(url, ["audit_anchors"]) == {"audit_anchors": (True, True, 1)}
