"""The recorder on a real Redis and a real SQLite store: ledger records reach the audit
log once, a bad record neither blocks the others nor is lost."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis

from api.compose.settings import AppSettings
from bus import keys, wire
from bus.commands import Command, NoopTask, deadline_in, new_run_id
from bus.ledger import LedgerRecord
from bus.publish import publish
from bus.runtime.context import StepContext, StepResult
from bus.runtime.deadletter import list_dead_letters
from bus.runtime.recorder import Applier, Recorder
from bus.runtime.worker import Worker
from bus.store import AuditStore, Scope, make_engine, upgrade_async
from gateway.audit import audit_record, make_audit_applier
from gateway.outcome import AuditRecord, OutcomeStatus, ToolOutcome
from tests.support import wait_for

LEDGER = keys.role_stream(keys.Role.RECORDER, 0)


@pytest.fixture
async def audit(tmp_path: Path) -> AsyncIterator[AuditStore]:
    url = f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
    await upgrade_async(url)
    engine = make_engine(url)
    yield AuditStore(engine)
    await engine.dispose()


def a_call(run_id: str, call_id: str = "c1", tenant: str = "t1") -> AuditRecord:
    return AuditRecord(
        tenant_id=tenant,
        subject="alice",
        run_id=run_id,
        agent="researcher",
        call_id=call_id,
        tool="calculator",
        tool_version="1.0.0",
        args={"expression": "23*19"},
        outcome=ToolOutcome(status=OutcomeStatus.OK, code="ok", result=437),
        duration_ms=0.5,
    )


async def running(recorder: Recorder) -> asyncio.Task[None]:
    await recorder.ensure_groups()
    return asyncio.create_task(recorder.run())


async def stop(recorder: Recorder, task: asyncio.Task[None]) -> None:
    recorder.stop()
    await asyncio.wait_for(task, 10)


async def test_a_committed_step_records_its_audit_row_once(
    real_redis: Redis, make_settings: Callable[..., AppSettings], audit: AuditStore
) -> None:
    settings = make_settings().bus
    run_id = new_run_id()

    async def gateway_like(ctx: StepContext, command: Command) -> StepResult:
        record = audit_record(f"{command.step_id}:0", a_call(command.run_id))
        return StepResult(finished="done", records=[record])

    command = Command(
        run_id=run_id,
        tenant_id="t1",
        subject="alice",
        role=keys.Role.NOOP,
        deadline=deadline_in(60),
        payload=NoopTask(hops_left=0),
    )
    worker = Worker(keys.Role.NOOP, gateway_like, real_redis, settings)
    recorder = Recorder(real_redis, settings, {"audit": make_audit_applier(audit)})
    await worker.ensure_groups()
    worker_task, recorder_task = asyncio.create_task(worker.run()), await running(recorder)
    try:
        await publish(real_redis, command, settings)

        async def written() -> bool:
            return await audit.count("t1") == 1

        await wait_for(written)
        # The same record delivered again (a recorder that died before its ack) adds nothing.
        (_, fields), *_ = await real_redis.xrange(LEDGER)
        await real_redis.xadd(LEDGER, fields)
        await wait_for(lambda: _acked(real_redis))
    finally:
        worker.stop()
        await stop(recorder, recorder_task)
        await asyncio.wait_for(worker_task, 10)
    rows = await audit.list(Scope.tenant("t1"))
    assert [(r.run_id, r.call_id, r.tool) for r in rows] == [(run_id, "c1", "calculator")]
    assert (await audit.verify()).ok


async def test_a_failing_record_stays_pending_then_is_dead_lettered_and_the_rest_land(
    real_redis: Redis, make_settings: Callable[..., AppSettings], audit: AuditStore
) -> None:
    settings = make_settings(claim_idle_ms=100, max_deliveries=3).bus
    attempts: list[str] = []

    async def broken(records: Sequence[LedgerRecord]) -> None:
        attempts.extend(r.key for r in records)
        raise RuntimeError("the database refused it")

    appliers: dict[str, Applier] = {"audit": make_audit_applier(audit), "broken": broken}
    recorder = Recorder(real_redis, settings, appliers)
    task = await running(recorder)
    try:
        await _add(real_redis, audit_record("run-a:1:0:0", a_call("run-a")))
        await _add(real_redis, LedgerRecord(kind="broken", key="k-bad", tenant_id="t1", data={}))
        await _add(real_redis, audit_record("run-b:1:0:0", a_call("run-b")))

        async def dead() -> bool:
            return len(await list_dead_letters(real_redis, settings)) == 1

        await wait_for(dead)
    finally:
        await stop(recorder, task)
    assert await audit.count("t1") == 2
    letter = (await list_dead_letters(real_redis, settings))[0][1]
    assert (letter.role, letter.reason, letter.deliveries) == ("recorder", "failed", 3)
    assert "the database refused it" in letter.error
    assert attempts.count("k-bad") >= 3
    assert await _acked(real_redis)


async def test_a_record_nobody_can_apply_is_dead_lettered_at_once(
    real_redis: Redis, make_settings: Callable[..., AppSettings], audit: AuditStore
) -> None:
    settings = make_settings().bus
    recorder = Recorder(real_redis, settings, {"audit": make_audit_applier(audit)})
    task = await running(recorder)
    try:
        await _add(real_redis, LedgerRecord(kind="mystery", key="k1", tenant_id="t1", data={}))
        await real_redis.xadd(LEDGER, {wire.DATA_FIELD: "not json"})

        async def dead() -> bool:
            return len(await list_dead_letters(real_redis, settings)) == 2

        await wait_for(dead)
    finally:
        await stop(recorder, task)
    reasons = sorted(letter.reason for _, letter in await list_dead_letters(real_redis, settings))
    assert reasons == ["failed", "unparseable"]


async def _add(redis: Redis, record: LedgerRecord) -> None:
    await redis.xadd(LEDGER, {wire.DATA_FIELD: wire.encode(record)})


async def _acked(redis: Redis) -> bool:
    groups: list[dict[str, Any]] = await redis.xinfo_groups(LEDGER)  # pyright: ignore[reportUnknownMemberType]
    group = next(g for g in groups if g["name"] == b"recorder")
    return group["pending"] == 0 and group.get("lag", 0) == 0
