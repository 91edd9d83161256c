"""The recorder's batched audit writes carry the trace context of the steps that wrote them:
on a real Redis and a real SQLite store, one batch is one span linked to each run's trace."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from redis.asyncio import Redis

from api.compose.settings import AppSettings
from bus import keys, tracing, wire
from bus.commands import TraceContext
from bus.ledger import TRACE_KEY, LedgerRecord
from bus.runtime.recorder import Recorder
from bus.store import AuditStore, make_engine, upgrade_async
from gateway.audit import audit_record, make_audit_applier
from gateway.outcome import AuditRecord, OutcomeStatus, ToolOutcome
from tests.support import wait_for

LEDGER = keys.role_stream(keys.Role.RECORDER, 0)
TRACE_A = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACE_B = "0af7651916cd43dd8448eb211c80319c"


@pytest.fixture
async def audit(tmp_path: Path) -> AsyncIterator[AuditStore]:
    url = f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
    await upgrade_async(url)
    engine = make_engine(url)
    yield AuditStore(engine)
    await engine.dispose()


@pytest.fixture
def exporter(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """Tracing on for one test, into memory (no global provider is set)."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(memory))
    monkeypatch.setattr(tracing, "_tracer", provider.get_tracer("test"))
    monkeypatch.setattr(tracing, "ENABLED", True)
    yield memory
    provider.shutdown()


def a_call(run_id: str) -> AuditRecord:
    return AuditRecord(
        tenant_id="t1",
        subject="alice",
        run_id=run_id,
        agent="researcher",
        call_id="c1",
        tool="calculator",
        tool_version="1.0.0",
        args={"expression": "23*19"},
        outcome=ToolOutcome(status=OutcomeStatus.OK, code="ok", result=437),
        duration_ms=0.5,
    )


def gateway_step_record(trace_id: str, run_id: str) -> LedgerRecord:
    """The audit record a gateway step of the run (its span continuing ``trace_id``) writes."""
    parent = TraceContext(traceparent=f"00-{trace_id}-00f067aa0ba902b7-01")
    with tracing.span("step gateway", parent=parent):
        return audit_record(f"{run_id}:3:0", a_call(run_id))


async def test_a_batch_is_one_span_linked_to_the_trace_of_each_record(
    real_redis: Redis,
    make_settings: Callable[..., AppSettings],
    audit: AuditStore,
    exporter: InMemorySpanExporter,
) -> None:
    records = [
        gateway_step_record(TRACE_A, "run-a"),
        gateway_step_record(TRACE_B, "run-b"),
        gateway_step_record(TRACE_A, "run-c"),  # same trace twice: one link
    ]
    for record in records:  # all in the stream before the recorder reads: one batch
        await real_redis.xadd(LEDGER, {wire.DATA_FIELD: wire.encode(record)})
    recorder = Recorder(real_redis, make_settings().bus, {"audit": make_audit_applier(audit)})
    await recorder.ensure_groups()
    task = asyncio.create_task(recorder.run())
    try:

        async def written() -> bool:
            return await audit.count("t1") == 3

        await wait_for(written)
    finally:
        recorder.stop()
        await asyncio.wait_for(task, 10)
    spans = exporter.get_finished_spans()  # the batch's span ended before the recorder did
    (batch,) = [s for s in spans if s.name == "recorder batch"]
    assert batch.attributes is not None
    assert batch.attributes["agentbus.recorder.records"] == 3
    assert batch.attributes["agentbus.recorder.links"] == 3
    # Each link names the trace and the span of the gateway step that wrote the record.
    steps = {
        (c.trace_id, c.span_id)
        for s in spans
        if s.name == "step gateway" and (c := s.context) is not None
    }
    assert {(link.context.trace_id, link.context.span_id) for link in batch.links} == steps
    assert {f"{t:032x}" for t, _ in steps} == {TRACE_A, TRACE_B}
    assert batch.context is not None
    assert f"{batch.context.trace_id:032x}" not in {TRACE_A, TRACE_B}  # its own trace


def test_off_a_record_carries_no_trace() -> None:
    assert not tracing.ENABLED
    record = audit_record("run-a:3:0", a_call("run-a"))
    assert TRACE_KEY not in record.data and record.traceparent is None
