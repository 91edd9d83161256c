"""A gate pause and its resume, traced across real processes: the paused run's trace has the
pause event, the person's resume is a ``gate resume`` span (in the API process) linked to
the step that paused, the resumed steps continue from it, and the recorder's batch links
to the run's trace. A real OTLP/HTTP receiver decodes what the processes export."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from redis.asyncio import Redis

from agentbus_bench.otlp_receiver import ReceivedSpan, otlp_receiver
from bus.store.migrate import upgrade_async
from tests.conftest import TEST_REDIS_URL
from tests.processes import cli, free_port, processes, spawn
from tests.support import events_of, until_serving, wait_for

CALLER_TRACE = "5bf92f3577b34da6a3ce929d0e0e4737"
CALLER_SPAN = "10f067aa0ba902b8"
ROLES = [
    "intake",
    "planner",
    "researcher",
    "gateway",
    "critic",
    "verifier",
    "finalizer",
    "retrieval",
    "recorder",
]


def named(spans: list[ReceivedSpan], name: str) -> list[ReceivedSpan]:
    return [s for s in spans if s.name == name]


@pytest.mark.timeout(300)  # processes start on a busy 2-core host
async def test_a_gate_pause_and_resume_are_traced_and_linked(
    real_redis: Redis, tmp_path: Path
) -> None:
    db = f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
    await upgrade_async(db)
    api_port = free_port()
    with otlp_receiver() as receiver, processes() as procs:
        env = {
            "AGENTBUS_REDIS_URL": TEST_REDIS_URL,
            "AGENTBUS_DATABASE_URL": db,
            "AGENTBUS_DATA_DIR": str(tmp_path / "data"),
            "AGENTBUS_LLM": "scripted",
            "AGENTBUS_READ_BLOCK_MS": "100",
            "AGENTBUS_AGENT_HUMAN_GATE": "true",  # answers wait for a person's approval
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
            "OTEL_BSP_SCHEDULE_DELAY": "100",
        }
        procs.append(spawn(["worker", *ROLES], env, tmp_path / "worker.log"))
        procs.append(spawn(["api", "--port", str(api_port)], env, tmp_path / "api.log"))
        key = (await cli(["keys", "create", "--tenant", "t1", "--subject", "alice"], env)).strip()

        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{api_port}", timeout=30) as http:
            await until_serving(real_redis, ROLES, http)
            auth = {"Authorization": f"Bearer {key}"}
            body = {
                "question": "What is 23 × 19?",
                "settings": {"mode": "multi"},
            }
            caller = {**auth, "traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"}
            posted = await http.post("/api/v1/runs", json=body, headers=caller)
            assert posted.status_code in (200, 201, 202), posted.text
            run_id = posted.json()["run_id"]

            async def paused() -> bool:
                return any(
                    e.type == "approval_request" for e in await events_of(real_redis, run_id)
                )

            await wait_for(paused, within=90, interval=0.2)
            # The person answers later, from another request (no traceparent: a new trace).
            resumed = await http.post(
                f"/api/v1/runs/{run_id}/resume", json={"decision": "approve"}, headers=auth
            )
            assert resumed.status_code == 200, resumed.text

            async def done() -> bool:
                events = await events_of(real_redis, run_id)
                return bool(events) and events[-1].type == "done"

            await wait_for(done, within=90, interval=0.2)

            def resume_span() -> ReceivedSpan | None:
                found = named(receiver.spans, "gate resume")
                return found[0] if found else None

            async def exported() -> bool:
                # Processes export in batches: wait for the pause, the resume, the resumed
                # finalizer step and the recorder's batch of the run's tool call.
                first = receiver.of_trace(CALLER_TRACE)
                resume = resume_span()
                if resume is None:
                    return False
                after = receiver.of_trace(resume.trace_id)
                return bool(
                    any(e == "gate_pause" for s in first for e, _ in s.events)
                    and named(after, "step finalizer")
                    and named(receiver.spans, "recorder batch")
                )

            try:
                await wait_for(exported, within=60, interval=0.2)
            except AssertionError:
                seen = sorted(
                    (s.trace_id[:8], s.name, [e for e, _ in s.events]) for s in receiver.spans
                )
                raise AssertionError(f"spans received: {seen}") from None

    first = receiver.of_trace(CALLER_TRACE)
    # The pause: an event on the step span that checkpointed the run.
    (pausing,) = [s for s in first if any(e == "gate_pause" for e, _ in s.events)]
    assert pausing.name.startswith("step ")
    (pause_attrs,) = [a for e, a in pausing.events if e == "gate_pause"]
    assert pause_attrs["agentbus.gate.reason"] == "approve_answer"
    # The resume: its own trace (a person's later request), linked to the paused step.
    (resume,) = named(receiver.spans, "gate resume")
    assert resume.trace_id != CALLER_TRACE
    assert resume.links == [(CALLER_TRACE, pausing.span_id)]
    assert resume.attributes["agentbus.run_id"] == run_id
    assert resume.attributes["agentbus.gate.reason"] == "approve_answer"
    assert resume.attributes["agentbus.gate.decision"] == "approve"
    # The resumed run continues from the resume span, in its trace.
    after = {s.span_id: s for s in receiver.of_trace(resume.trace_id)}
    (finalizer,) = [s for s in after.values() if s.name == "step finalizer"]
    assert finalizer.parent_span_id == resume.span_id
    assert finalizer.attributes["agentbus.run_id"] == run_id
    # The recorder wrote the run's tool-call audit row in a batch linked to the run's trace.
    gateway_steps = {s.span_id for s in first if s.name == "step gateway"}
    batch_links = {link for s in named(receiver.spans, "recorder batch") for link in s.links}
    assert any(t == CALLER_TRACE and span in gateway_steps for t, span in batch_links)
