"""Retention's deletes on SQLite and Postgres (as the app role row-level security binds).

Ended runs, idle conversations, ended or expired gates and the start of the audit chain go
in batches; a run in flight or paused never does, whatever its age; the audit chain still
verifies from its anchor afterwards, and tampering after the anchor is still caught.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from bus.store import (
    AuditEntry,
    AuditStore,
    CheckpointRecord,
    CheckpointStore,
    ConversationStore,
    MessageRole,
    RetentionStore,
    RunRecord,
    RunStatus,
    RunStore,
    Scope,
)
from bus.store.checkpoints import GateReason
from bus.store.repository import utcnow

NOW = datetime.now(UTC)
OLD = NOW - timedelta(days=40)
CUTOFF = NOW - timedelta(days=30)


async def sql(engine: AsyncEngine, statement: str, **params: Any) -> None:
    async with engine.begin() as conn:
        await conn.execute(text(statement), params)


async def run(
    engine: AsyncEngine, run_id: str, status: RunStatus, *, at: datetime = OLD, tenant: str = "t1"
) -> None:
    ended = status not in (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.SUSPENDED)
    await RunStore(engine).create(
        RunRecord(
            id=run_id,
            tenant_id=tenant,
            subject="alice",
            mode="single",
            question=f"question of {run_id}",
            status=status,
            created_at=at,
            updated_at=at,
            finished_at=at if ended else None,
            conversation_id=f"conv-{run_id}",
        )
    )


def stamp(engine: AsyncEngine, at: datetime) -> datetime:
    """A time as raw SQL binds it: SQLite stores naive UTC (``UTCDateTime``)."""
    return at if engine.dialect.name == "postgresql" else at.replace(tzinfo=None)


async def gate(engine: AsyncEngine, gate_id: str, run_id: str, *, expires: datetime) -> None:
    gates = CheckpointStore(engine)
    await gates.create(
        CheckpointRecord(
            id=gate_id,
            run_id=run_id,
            tenant_id="t1",
            subject="alice",
            reason=GateReason.APPROVE_ANSWER,
            step=1,
            state={},
            created_at=OLD,
            expires_at=expires,
        )
    )


async def ids(engine: AsyncEngine, table: str) -> set[str]:
    async with engine.connect() as conn:
        return {str(r[0]) for r in await conn.execute(text(f"SELECT id FROM {table}"))}


async def test_ended_runs_past_the_cutoff_go_but_never_one_in_flight_or_paused(
    engine: AsyncEngine, superuser_engine: AsyncEngine
) -> None:
    for run_id, status in (
        ("old-done", RunStatus.DONE),
        ("old-error", RunStatus.ERROR),
        ("old-running", RunStatus.RUNNING),
        ("old-queued", RunStatus.QUEUED),
        ("old-paused", RunStatus.SUSPENDED),
    ):
        await run(engine, run_id, status)
    await run(engine, "new-done", RunStatus.DONE, at=NOW)
    await run(engine, "t2-old-done", RunStatus.DONE, tenant="t2")
    # The ended run's gate goes with it; the paused run's open gate stays with its run.
    await gate(engine, "g-done", "old-done", expires=OLD + timedelta(hours=1))
    await gate(engine, "g-paused", "old-paused", expires=NOW + timedelta(hours=1))

    store = RetentionStore(engine)
    assert await store.count("t1", "runs", CUTOFF) == 2
    first = await store.prune_runs("t1", CUTOFF, limit=1)
    second = await store.prune_runs("t1", CUTOFF, limit=1)
    assert len(first) == len(second) == 1  # one batch: at most the limit
    assert await store.prune_runs("t1", CUTOFF, limit=1) == []
    assert set(first + second) == {"old-done", "old-error"}

    left = await ids(superuser_engine, "runs")
    assert left == {"old-running", "old-queued", "old-paused", "new-done", "t2-old-done"}
    assert await ids(superuser_engine, "checkpoints") == {"g-paused"}


async def test_idle_conversations_go_whole_unless_a_run_of_theirs_is_in_flight(
    engine: AsyncEngine, superuser_engine: AsyncEngine
) -> None:
    conversations = ConversationStore(engine)
    alice = Scope.user("t1", "alice")
    for conv in ("idle", "busy", "fresh"):
        await conversations.ensure(alice, conv, f"about {conv}")
        await conversations.append(alice, conv, MessageRole.USER, f"q {conv}", f"r-{conv}")
        await conversations.append(alice, conv, MessageRole.ASSISTANT, f"a {conv}", f"r-{conv}")
    await conversations.ensure(Scope.user("t2", "alice"), "t2-idle", "t2")
    await RunStore(engine).create(
        RunRecord(
            id="r-busy-2",
            tenant_id="t1",
            subject="alice",
            mode="single",
            question="still going",
            status=RunStatus.RUNNING,
            conversation_id="busy",
        )
    )
    await sql(
        superuser_engine,
        "UPDATE conversations SET updated_at = :old WHERE id IN ('idle', 'busy', 't2-idle')",
        old=stamp(superuser_engine, OLD),
    )

    store = RetentionStore(engine)
    assert await store.count("t1", "conversations", CUTOFF) == 1
    assert await store.count("t1", "messages", CUTOFF) == 2
    assert await store.prune_conversations("t1", CUTOFF, limit=10) == (1, 2)
    assert await store.prune_conversations("t1", CUTOFF, limit=10) == (0, 0)

    assert await ids(superuser_engine, "conversations") == {"busy", "fresh", "t2-idle"}
    async with superuser_engine.connect() as conn:
        owners = {r[0] for r in await conn.execute(text("SELECT conversation_id FROM messages"))}
    assert owners == {"busy", "fresh"}


async def test_gates_that_ended_or_expired_before_the_cutoff_go_open_ones_stay(
    engine: AsyncEngine, superuser_engine: AsyncEngine
) -> None:
    await run(engine, "paused", RunStatus.SUSPENDED)
    await gate(engine, "expired-long-ago", "r1", expires=OLD + timedelta(hours=1))
    await gate(engine, "open", "paused", expires=NOW + timedelta(days=1))
    await gate(engine, "decided-long-ago", "r2", expires=NOW + timedelta(days=1))
    await gate(engine, "decided-now", "r3", expires=NOW + timedelta(days=1))
    decide = "UPDATE checkpoints SET resumed_at = :at, decision = 'approve' WHERE id = :id"
    await sql(superuser_engine, decide, at=stamp(superuser_engine, OLD), id="decided-long-ago")
    await sql(superuser_engine, decide, at=stamp(superuser_engine, utcnow()), id="decided-now")

    store = RetentionStore(engine)
    assert await store.prune_checkpoints("t1", CUTOFF, limit=10) == 2
    assert await ids(superuser_engine, "checkpoints") == {"open", "decided-now"}


def audit_entry(n: int, tenant: str = "t1") -> AuditEntry:
    return AuditEntry(
        tenant_id=tenant,
        subject="alice",
        run_id=f"run-{n}",
        agent="researcher",
        call_id=f"call-{n}",
        tool="calculator",
        args={"expression": f"{n} + 1"},
        status="ok",
        code="ok",
        duration_ms=1.0,
    )


async def test_pruning_the_audit_moves_the_anchor_and_tampering_after_it_is_still_caught(
    engine: AsyncEngine, superuser_engine: AsyncEngine
) -> None:
    audit, store = AuditStore(engine), RetentionStore(engine)
    for n in range(1, 4):
        await audit.append(audit_entry(n))
    await asyncio.sleep(0.01)
    cutoff = utcnow()
    await asyncio.sleep(0.01)
    for n in range(4, 7):
        await audit.append(audit_entry(n))
    await audit.append(audit_entry(1, tenant="t2"))

    assert await store.count("t1", "audit", cutoff) == 3
    # Batches of two: rows 1-2, then 3, then none (rows 4-6 are newer than the cutoff).
    assert [await store.prune_audit("t1", cutoff, limit=2) for _ in range(3)] == [2, 1, 0]

    report = await audit.verify("t1")
    [chain] = report.chains
    assert chain.ok, chain.broken
    assert (chain.anchor_seq, chain.rows, chain.head_seq) == (3, 3, 6)
    assert (await audit.verify("t2")).chains[0].rows == 1  # another tenant's chain untouched

    # An edit after the anchor is the first broken row, as before any pruning.
    await sql(
        superuser_engine, "UPDATE audit_log SET code = 'edited' WHERE tenant_id = 't1' AND seq = 5"
    )
    [edited] = (await audit.verify("t1")).chains
    assert edited.broken is not None and edited.broken.seq == 5
    assert "edited" in edited.broken.reason

    # A row deleted right after the anchor is caught too: the chain no longer follows it.
    await sql(superuser_engine, "DELETE FROM audit_log WHERE tenant_id = 't1' AND seq = 4")
    [gap] = (await audit.verify("t1")).chains
    assert gap.broken is not None and gap.broken.seq == 5 and "deleted" in gap.broken.reason


async def test_an_anchor_moved_by_hand_does_not_verify(
    engine: AsyncEngine, superuser_engine: AsyncEngine
) -> None:
    audit, store = AuditStore(engine), RetentionStore(engine)
    for n in range(1, 5):
        await audit.append(audit_entry(n))
    assert await store.prune_audit("t1", utcnow() + timedelta(seconds=1), limit=2) == 2
    assert (await audit.verify("t1")).ok
    # Hiding row 3 by deleting it and moving the anchor's seq by hand: the hash the anchor
    # records is still row 2's, and row 4 does not follow it.
    await sql(superuser_engine, "DELETE FROM audit_log WHERE tenant_id = 't1' AND seq = 3")
    await sql(superuser_engine, "UPDATE audit_anchors SET seq = 3 WHERE tenant_id = 't1'")
    [chain] = (await audit.verify("t1")).chains
    assert chain.broken is not None and chain.broken.seq == 4
    assert "prev_hash" in chain.broken.reason
