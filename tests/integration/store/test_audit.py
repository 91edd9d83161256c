"""The audit log on SQLite and Postgres: the chain, tamper detection, concurrent appends."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest
from sqlalchemy import Engine, event, text
from sqlalchemy.ext.asyncio import AsyncEngine

from bus.store import AuditEntry, AuditStore, RunRecord, RunStore, Scope, make_engine
from bus.store.audit_chain import GENESIS
from gateway.audit import entry_of
from gateway.chain import invoke
from tests.unit.gateway.fakes import Echo, call, context

T1 = Scope.admin("t1", "root")
T2 = Scope.admin("t2", "root")


@pytest.fixture
def audit(engine: AsyncEngine) -> AuditStore:
    return AuditStore(engine)


def entry(n: int = 0, *, tenant: str = "t1", call_id: str | None = None, **over: Any) -> AuditEntry:
    values: dict[str, Any] = {
        "tenant_id": tenant,
        "subject": "alice",
        "run_id": "run-1",
        "agent": "researcher",
        "call_id": call_id or f"call-{n}",
        "tool": "calculator",
        "tool_version": "1.0.0",
        "args": {"expression": f"{n} + 1", "api_key": "[REDACTED]", "ü": [1, 2.5, None]},
        "status": "ok",
        "code": "ok",
        "message": "",
        "duration_ms": 1.25 + n,
    }
    return AuditEntry(**(values | over))


async def fill(audit: AuditStore, n: int, tenant: str = "t1") -> None:
    for i in range(n):
        await audit.append(entry(i, tenant=tenant))


async def sql(engine: AsyncEngine, statement: str, **params: Any) -> None:
    async with engine.begin() as conn:
        await conn.execute(text(statement), params)


async def test_appends_form_a_chain_that_verifies(audit: AuditStore) -> None:
    first = await audit.append(entry(0))
    second = await audit.append(entry(1, status="refused", code="approval_required"))
    assert first is not None and second is not None
    assert (first.seq, first.prev_hash) == (1, GENESIS)
    assert (second.seq, second.prev_hash) == (2, first.row_hash)
    assert first.args_value()["ü"] == [1, 2.5, None]
    stored = await audit.list(T1)
    assert [r.seq for r in stored] == [2, 1]
    assert stored[1] == first  # read back exactly as written, hash included

    report = await audit.verify()
    assert report.ok
    [chain] = report.chains
    assert (chain.tenant_id, chain.rows, chain.head_seq, chain.head_hash) == (
        "t1",
        2,
        2,
        second.row_hash,
    )


async def test_each_tenant_has_its_own_chain(audit: AuditStore) -> None:
    await fill(audit, 2, "t1")
    await fill(audit, 3, "t2")
    assert [r.seq for r in await audit.list(T2)] == [3, 2, 1]
    report = await audit.verify()
    assert [(c.tenant_id, c.rows) for c in report.chains] == [("t1", 2), ("t2", 3)]
    only = await audit.verify("t2")
    assert [c.tenant_id for c in only.chains] == ["t2"]


async def test_an_edited_row_is_the_first_broken_row(
    audit: AuditStore, superuser_engine: AsyncEngine
) -> None:
    await fill(audit, 4)
    await sql(superuser_engine, "UPDATE audit_log SET code = 'ok_edited' WHERE seq = 2")
    await sql(superuser_engine, "UPDATE audit_log SET args = '{}' WHERE seq = 3")
    [chain] = (await audit.verify()).chains
    assert chain.broken is not None and chain.rows == 1
    assert chain.broken.seq == 2 and "edited" in chain.broken.reason
    assert chain.broken.record is not None and chain.broken.record.code == "ok_edited"


async def test_an_edit_with_a_recomputed_hash_breaks_the_next_link(
    audit: AuditStore, superuser_engine: AsyncEngine
) -> None:
    await fill(audit, 3)
    [row] = [r for r in await audit.list(T1) if r.seq == 2]
    forged = row.model_copy(update={"status": "error", "code": "tool_error"})
    await sql(
        superuser_engine,
        "UPDATE audit_log SET status = 'error', code = 'tool_error', row_hash = :h WHERE seq = 2",
        h=forged.expected_hash(),
    )
    [chain] = (await audit.verify()).chains
    assert chain.broken is not None and chain.broken.seq == 3
    assert "prev_hash" in chain.broken.reason


@pytest.mark.parametrize(
    ("deleted", "broken_seq", "words"),
    [(1, 2, "deleted or inserted"), (3, 4, "deleted or inserted"), (5, 5, "at the end")],
)
async def test_a_deleted_row_is_detected(
    audit: AuditStore, superuser_engine: AsyncEngine, deleted: int, broken_seq: int, words: str
) -> None:
    await fill(audit, 5)
    await sql(superuser_engine, "DELETE FROM audit_log WHERE seq = :s", s=deleted)
    [chain] = (await audit.verify()).chains
    assert chain.broken is not None and chain.broken.seq == broken_seq
    assert words in chain.broken.reason


async def test_a_deleted_head_is_detected(audit: AuditStore, superuser_engine: AsyncEngine) -> None:
    await fill(audit, 2)
    await sql(superuser_engine, "DELETE FROM audit_heads")
    [chain] = (await audit.verify()).chains
    assert chain.broken is not None and "no head" in chain.broken.reason


async def test_once_per_call_records_a_call_id_once(audit: AuditStore) -> None:
    assert await audit.append(entry(0, call_id="c-1"), once_per_call=True) is not None
    assert await audit.append(entry(0, call_id="c-1"), once_per_call=True) is None
    assert await audit.append(entry(0, call_id="c-1")) is not None  # a re-run is logged
    assert await audit.count("t1") == 2
    assert (await audit.verify()).ok


async def test_concurrent_appends_from_several_pools_keep_one_line(
    audit: AuditStore, store_url: str
) -> None:
    engines = [make_engine(store_url) for _ in range(3)]
    try:
        stores = [AuditStore(e) for e in engines]
        await asyncio.gather(
            *(s.append(entry(i * 10 + k)) for i, s in enumerate(stores) for k in range(8))
        )
    finally:
        for e in engines:
            await e.dispose()
    report = await audit.verify()
    assert report.ok and report.chains[0].rows == 24
    assert sorted(r.seq for r in await audit.list(T1, limit=100)) == list(range(1, 25))


async def test_concurrent_appends_from_several_processes_keep_one_line(
    audit: AuditStore, store_url: str
) -> None:
    writers = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tests.integration.store.audit_writer",
            store_url,
            "t1",
            "15",
            label,
            stderr=asyncio.subprocess.PIPE,
        )
        for label in ("a", "b", "c")
    ]
    for w in writers:
        _, err = await asyncio.wait_for(w.communicate(), 90)
        assert w.returncode == 0, err.decode()
    report = await audit.verify()
    assert report.ok, report
    assert report.chains[0].rows == 45
    calls = {r.call_id for r in await audit.list(T1, limit=100)}
    assert len(calls) == 45


async def test_the_gateway_records_are_stored_redacted(audit: AuditStore) -> None:
    ctx = context(Echo())
    for args in ({"text": "hi", "api_key": "sk-live-123"}, {"password": "hunter2"}):
        _, record = await invoke(call("echo" if "text" in args else "nope", args), ctx)
        await audit.append_many([(entry_of(record), record.side_effects)])
    first, second = reversed(await audit.list(T1))
    assert first.args_value() == {"text": "hi", "api_key": "[REDACTED]"}
    assert (first.tool, first.tool_version, first.status, first.agent) == (
        "echo",
        "1.0.0",
        "ok",
        "researcher",
    )
    assert (second.code, second.tool_version) == ("unknown_tool", None)
    assert "hunter2" not in second.args and (await audit.verify()).ok


async def test_group_commit_keeps_one_verifiable_chain_per_tenant(audit: AuditStore) -> None:
    await asyncio.gather(
        *(
            audit.append_many([(entry(i, tenant="t1" if i % 3 else "t2", call_id=f"c{i}"), False)])
            for i in range(40)
        )
    )
    # A side-effecting call re-sent in the same batch is kept once.
    await audit.append_many([(entry(99, call_id="dup"), True), (entry(99, call_id="dup"), True)])
    assert await audit.count("t1") == 26 + 1 and await audit.count("t2") == 14
    report = await audit.verify()
    assert report.ok, report


async def test_a_batch_costs_four_statements_and_a_single_append_three(
    audit: AuditStore,
) -> None:
    # What the recorder pays per flush: the head claimed (created for a new tenant) and
    # returned in one statement, the batch's keys looked up, its rows, the head moved.
    # Every engine: on SQLite the batch runs on the group commit's own inline connection.
    # The scope's set_config on Postgres (row-level security) is not the log's cost.
    seen: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if "audit_" in statement:
            seen.append(statement.split()[0])

    event.listen(Engine, "before_cursor_execute", count)
    try:
        batch = [(entry(i, record_key=f"k{i}"), False) for i in range(3)]
        assert await audit.append_many(batch) == 3
        assert seen == ["INSERT", "SELECT", "INSERT", "UPDATE"], seen
        seen.clear()
        await audit.append(entry(7))
        assert seen == ["INSERT", "INSERT", "UPDATE"], seen
    finally:
        event.remove(Engine, "before_cursor_execute", count)
    assert (await audit.verify()).ok and await audit.count("t1") == 4


# --- reading the log: scoped like runs, filtered, paged -------------------------------------


async def test_a_user_reads_the_rows_of_their_own_runs_and_an_admin_the_tenants(
    audit: AuditStore,
) -> None:
    await audit.append(entry(0, run_id="ra"))
    await audit.append(entry(1, run_id="rb", subject="bob"))
    await audit.append(entry(2, run_id="rx", tenant="t2"))

    assert [r.run_id for r in await audit.list(Scope.user("t1", "alice"))] == ["ra"]
    assert [r.run_id for r in await audit.list(Scope.user("t1", "bob"))] == ["rb"]
    assert [r.run_id for r in await audit.list(T1)] == ["rb", "ra"]
    assert await audit.list(Scope.user("t2", "mallory")) == []
    assert [r.run_id for r in await audit.list(T2)] == ["rx"]


async def test_rows_filter_by_run_and_conversation_and_page_back_by_seq(
    audit: AuditStore, engine: AsyncEngine
) -> None:
    runs = RunStore(engine)
    for run_id, conversation in (("r1", "c1"), ("r2", "c1"), ("r3", "c2")):
        await runs.create(
            RunRecord(
                id=run_id,
                tenant_id="t1",
                subject="alice",
                mode="single",
                question="q",
                conversation_id=conversation,
            )
        )
    for n, run_id in enumerate(("r1", "r2", "r3", "r1", "none")):
        await audit.append(entry(n, run_id=run_id))
    # A row about the conversation itself: an admin read it.
    await audit.append(entry(9, run_id="", agent="api", call_id="c1", subject="root"))
    alice = Scope.user("t1", "alice")

    assert [r.seq for r in await audit.list(alice, run_id="r1")] == [4, 1]
    assert [r.seq for r in await audit.list(alice, conversation_id="c1")] == [4, 2, 1]
    assert [r.seq for r in await audit.list(T1, conversation_id="c1")] == [6, 4, 2, 1]
    assert [r.seq for r in await audit.list(T1, conversation_id="c2")] == [3]
    assert await audit.list(Scope.user("t1", "bob"), conversation_id="c1") == []
    first = await audit.list(T1, limit=2)
    rest = await audit.list(T1, limit=10, before_seq=first[-1].seq)
    assert [r.seq for r in first + rest] == [6, 5, 4, 3, 2, 1]
