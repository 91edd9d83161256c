"""CheckpointStore conformance on SQLite and Postgres, and row-level security on Postgres."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError
from sqlalchemy import inspect, text
from sqlalchemy.ext.asyncio import AsyncEngine

from bus.errors import StoreError
from bus.store import (
    CheckpointRecord,
    CheckpointStore,
    GateAlreadyOpen,
    GateConflict,
    GateExpired,
    GateForbidden,
    GateNotFound,
    GateReason,
    Scope,
    make_engine,
)
from bus.store.migrate import downgrade_async, upgrade_async

T0 = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)
TTL = timedelta(hours=1)
ALICE = Scope.user("tenant-a", "alice")
B_ALICE = Scope.user("tenant-b", "alice")
BOB = Scope.user("tenant-a", "bob")
ADMIN = Scope.admin("tenant-a", "root")
ONLY_POSTGRES = pytest.mark.parametrize(
    "store_url", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)


def a_gate(
    gate_id: str = "gate-1",
    run_id: str = "run-1",
    tenant_id: str = "tenant-a",
    **changes: Any,
) -> CheckpointRecord:
    fields: dict[str, Any] = {
        "id": gate_id,
        "run_id": run_id,
        "tenant_id": tenant_id,
        "subject": "alice",
        "reason": GateReason.EGRESS_APPROVAL,
        "step": 3,
        "state": {"messages": [{"role": "user", "content": "q"}], "tool_results": {"c1": "ok"}},
        "blocked_host": "api.example.com",
        "tool": "http.get",
        "args": {"url": "https://api.example.com/x", "token": "[REDACTED]"},
        "created_at": T0,
        "expires_at": T0 + TTL,
    }
    return CheckpointRecord.model_validate(fields | changes)


@pytest.fixture
def gates(engine: AsyncEngine) -> CheckpointStore:
    return CheckpointStore(engine)


async def test_create_then_open_for_returns_the_same_gate(gates: CheckpointStore) -> None:
    gate = a_gate()

    assert await gates.create(gate) == gate

    assert await gates.open_for(ALICE, "run-1") == gate
    assert await gates.history(ALICE, "run-1") == [gate]


async def test_an_answer_gate_needs_no_host_and_keeps_null_args(
    gates: CheckpointStore, superuser_engine: AsyncEngine
) -> None:
    gate = a_gate(reason=GateReason.APPROVE_ANSWER, blocked_host=None, tool=None, args=None)

    await gates.create(gate)

    assert await gates.open_for(ALICE, "run-1") == gate
    async with superuser_engine.connect() as conn:
        # SQL NULL, not the JSON text 'null'. (No scope set: on Postgres this raw query
        # sees rows only because a superuser bypasses row-level security.)
        nulls = await conn.scalar(text("SELECT count(*) FROM checkpoints WHERE args IS NULL"))
    assert nulls == 1


async def test_another_tenant_sees_no_gate(gates: CheckpointStore) -> None:
    await gates.create(a_gate(tenant_id="tenant-b"))

    assert await gates.open_for(ALICE, "run-1") is None
    assert await gates.history(ALICE, "run-1") == []
    assert await gates.open_for(B_ALICE, "run-1") is not None


async def test_claim_marks_the_gate_resumed(gates: CheckpointStore) -> None:
    await gates.create(a_gate())
    now = T0 + timedelta(minutes=5)

    claimed = await gates.claim(ALICE, "run-1", "egress_allow_once", now)

    assert claimed == a_gate(resumed_at=now, decision="egress_allow_once")
    assert not claimed.is_open
    assert await gates.open_for(ALICE, "run-1") is None
    assert await gates.history(ALICE, "run-1") == [claimed]


async def test_claim_defaults_to_the_current_time(gates: CheckpointStore) -> None:
    before = datetime.now(UTC)
    await gates.create(a_gate(created_at=before, expires_at=before + TTL))

    claimed = await gates.claim(ALICE, "run-1", "approve")

    assert claimed.resumed_at is not None and before <= claimed.resumed_at <= datetime.now(UTC)


async def test_a_foreign_run_is_not_found_exactly_like_an_unknown_one(
    gates: CheckpointStore,
) -> None:
    await gates.create(a_gate("gate-b", "run-b", tenant_id="tenant-b"))

    with pytest.raises(GateNotFound) as foreign:
        await gates.claim(ALICE, "run-b", "approve", T0)
    with pytest.raises(GateNotFound) as unknown:
        await gates.claim(ALICE, "run-x", "approve", T0)

    assert foreign.value.code == unknown.value.code == "gate_not_found"
    assert str(foreign.value).replace("run-b", "?") == str(unknown.value).replace("run-x", "?")
    assert isinstance(foreign.value, StoreError)
    assert await gates.open_for(B_ALICE, "run-b") is not None


async def test_another_user_finds_no_gate_and_the_gate_stays_open(
    gates: CheckpointStore,
) -> None:
    gate = await gates.create(a_gate())

    with pytest.raises(GateNotFound) as caught:
        await gates.claim(BOB, "run-1", "egress_allow_always", T0)

    assert caught.value.code == "gate_not_found"
    assert await gates.open_for(BOB, "run-1") is None
    assert await gates.history(BOB, "run-1") == []
    assert await gates.open_for(ALICE, "run-1") == gate


async def test_an_admin_reads_another_users_gate_but_may_not_resume_it(
    gates: CheckpointStore,
) -> None:
    gate = await gates.create(a_gate())

    assert await gates.open_for(ADMIN, "run-1") == gate
    with pytest.raises(GateForbidden) as caught:
        await gates.claim(ADMIN, "run-1", "egress_allow_always", T0)

    assert caught.value.code == "gate_forbidden"
    assert await gates.open_for(ALICE, "run-1") == gate
    assert await gates.open_for(Scope.admin("tenant-b", "root"), "run-1") is None


async def test_a_second_claim_is_a_conflict(gates: CheckpointStore) -> None:
    await gates.create(a_gate())
    first = await gates.claim(ALICE, "run-1", "egress_deny", T0)

    with pytest.raises(GateConflict) as caught:
        await gates.claim(ALICE, "run-1", "egress_allow_once", T0)

    assert caught.value.code == "gate_conflict"
    assert await gates.history(ALICE, "run-1") == [first]


async def test_an_expired_gate_is_refused_and_left_open(gates: CheckpointStore) -> None:
    gate = await gates.create(a_gate())

    for late in (T0 + TTL, T0 + TTL + timedelta(days=1)):
        with pytest.raises(GateExpired) as caught:
            await gates.claim(ALICE, "run-1", "approve", late)
        assert caught.value.code == "gate_expired"

    assert await gates.open_for(ALICE, "run-1") == gate
    assert gate.is_expired(T0 + TTL) and not gate.is_expired(T0)


async def test_a_run_waits_at_one_gate_at_a_time(gates: CheckpointStore) -> None:
    first = await gates.create(a_gate())

    with pytest.raises(GateAlreadyOpen) as caught:
        await gates.create(a_gate("gate-2", step=5))

    assert caught.value.code == "gate_already_open"
    assert await gates.history(ALICE, "run-1") == [first]


async def test_a_taken_gate_id_is_a_plain_store_error(gates: CheckpointStore) -> None:
    await gates.create(a_gate())

    with pytest.raises(StoreError, match="already exists") as caught:
        await gates.create(a_gate(run_id="run-2"))

    assert type(caught.value) is StoreError
    assert await gates.open_for(ALICE, "run-2") is None


async def test_a_resumed_run_may_pause_again(gates: CheckpointStore) -> None:
    await gates.create(a_gate())
    first = await gates.claim(ALICE, "run-1", "egress_allow_once", T0)
    later = T0 + timedelta(minutes=1)
    second = await gates.create(
        a_gate("gate-2", step=7, blocked_host="b.example", created_at=later, expires_at=later + TTL)
    )

    assert await gates.open_for(ALICE, "run-1") == second
    assert await gates.history(ALICE, "run-1") == [first, second]
    resumed = await gates.claim(ALICE, "run-1", "egress_deny", later)
    assert (resumed.id, resumed.decision) == ("gate-2", "egress_deny")


async def test_concurrent_claims_resume_the_gate_once(gates: CheckpointStore) -> None:
    await gates.create(a_gate())

    results = await asyncio.gather(
        *(gates.claim(ALICE, "run-1", f"d{i}", T0) for i in range(5)),
        return_exceptions=True,
    )

    won = [r for r in results if isinstance(r, CheckpointRecord)]
    assert len(won) == 1
    assert all(isinstance(r, GateConflict) for r in results if r not in won)
    assert await gates.history(ALICE, "run-1") == won


@pytest.mark.parametrize(
    "changes",
    [
        {"blocked_host": None},
        {"tool": None},
        {"expires_at": T0},
        {"resumed_at": T0},
        {"decision": "approve"},
        {"step": -1},
    ],
)
def test_inconsistent_records_are_refused(changes: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        a_gate(**changes)


async def test_claim_refuses_bad_arguments(gates: CheckpointStore) -> None:
    await gates.create(a_gate())

    with pytest.raises(ValueError, match="decision"):
        await gates.claim(ALICE, "run-1", "", T0)
    with pytest.raises(ValueError, match="naive"):
        await gates.claim(ALICE, "run-1", "approve", datetime(2025, 1, 1))
    assert await gates.open_for(ALICE, "run-1") is not None


async def test_0006_downgrades_to_0005_and_back(store_url: str) -> None:
    await upgrade_async(store_url)

    await downgrade_async(store_url, "0005")

    assert "checkpoints" not in await _tables(store_url)
    await upgrade_async(store_url)
    assert "checkpoints" in await _tables(store_url)


async def _tables(url: str) -> set[str]:
    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(lambda sync: set(inspect(sync).get_table_names()))
    finally:
        await engine.dispose()


@ONLY_POSTGRES
async def test_0006_turns_row_level_security_on_and_its_downgrade_off(store_url: str) -> None:
    await upgrade_async(store_url)
    assert await _rls_state(store_url) == (True, True, 1)

    await downgrade_async(store_url, "0005")

    assert await _rls_state(store_url) == (None, None, 0)


async def _rls_state(url: str) -> tuple[bool | None, bool | None, int]:
    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            flags = (
                await conn.execute(
                    text(
                        "SELECT relrowsecurity, relforcerowsecurity FROM pg_class"
                        " WHERE relname = 'checkpoints'"
                    )
                )
            ).first()
            policies = await conn.scalar(
                text("SELECT count(*) FROM pg_policies WHERE tablename = 'checkpoints'")
            )
    finally:
        await engine.dispose()
    enabled, forced = (None, None) if flags is None else (flags[0], flags[1])
    return enabled, forced, int(policies or 0)
