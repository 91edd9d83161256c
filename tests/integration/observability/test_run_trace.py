"""One run is one trace across processes: a real OTLP/HTTP receiver decodes what the API
and the worker processes export, while a critic replica is SIGKILLed mid-step."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import httpx
import pytest
from redis.asyncio import Redis

from agentbus_bench.otlp_receiver import ReceivedSpan, otlp_receiver
from bus import keys
from bus.events import Done
from bus.store.migrate import upgrade_async
from tests.conftest import TEST_REDIS_URL
from tests.processes import cli, free_port, processes, spawn
from tests.support import events_of, narrow, until_serving, wait_for

CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
EVERY_ROLE = {"intake", "planner", "researcher", "gateway", "critic", "verifier", "finalizer"}
PRICES = {"scripted": {"input": 0.5, "output": 1.5}}  # USD per 1k tokens


def steps(spans: list[ReceivedSpan], role: str) -> list[ReceivedSpan]:
    return [s for s in spans if s.name == f"step {role}"]


@pytest.mark.timeout(300)  # six processes start on a busy 2-core host
async def test_a_multi_mode_run_is_one_trace_across_worker_processes(
    real_redis: Redis, tmp_path: Path
) -> None:
    db = f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
    await upgrade_async(db)
    api_port, finalizer_metrics, critic_metrics = free_port(), free_port(), free_port()
    with otlp_receiver() as receiver, processes() as procs:
        env = {
            "AGENTBUS_REDIS_URL": TEST_REDIS_URL,
            "AGENTBUS_DATABASE_URL": db,
            "AGENTBUS_DATA_DIR": str(tmp_path / "data"),
            "AGENTBUS_LLM": "scripted",
            "AGENTBUS_LLM_TOKEN_DELAY_S": "0.02",
            "AGENTBUS_LLM_PRICES": json.dumps(PRICES),
            "AGENTBUS_CLAIM_IDLE_MS": "1000",
            "AGENTBUS_HEARTBEAT_MS": "200",
            "AGENTBUS_READ_BLOCK_MS": "100",
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
            "OTEL_BSP_SCHEDULE_DELAY": "100",
        }
        groups = [
            ["intake", "planner", "retrieval", "gateway", "recorder"],
            ["researcher", "verifier"],
        ]
        for i, roles in enumerate(groups):
            procs.append(spawn(["worker", *roles], env, tmp_path / f"worker-{i}.log"))
        finalizer_env = {**env, "AGENTBUS_METRICS_PORT": str(finalizer_metrics)}
        procs.append(spawn(["worker", "finalizer"], finalizer_env, tmp_path / "finalizer.log"))
        slow = {**env, "AGENTBUS_LLM_TOKEN_DELAY_S": "2"}  # killed well inside its critique
        critic = spawn(["worker", "critic"], slow, tmp_path / "critic-a.log")
        procs.append(critic)
        procs.append(spawn(["api", "--port", str(api_port)], env, tmp_path / "api.log"))
        key = (await cli(["keys", "create", "--tenant", "t1", "--subject", "alice"], env)).strip()

        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{api_port}", timeout=30) as http:
            await until_serving(real_redis, [*EVERY_ROLE, "retrieval"], http)
            auth = {
                "Authorization": f"Bearer {key}",
                "traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01",
            }
            body = {
                "question": "What is 23 × 19?",
                "settings": {"mode": "multi", "accuracy": "accurate"},
            }
            run_id = (await http.post("/api/v1/runs", json=body, headers=auth)).json()["run_id"]

            critic_stream = keys.role_stream(keys.Role.CRITIC, 0)

            async def critic_busy() -> bool:
                return (await real_redis.xpending(critic_stream, "critic"))["pending"] > 0

            await wait_for(critic_busy, within=90)
            critic.send_signal(signal.SIGKILL)  # mid-step: its span never ends
            critic.wait(10)
            critic_env = {**env, "AGENTBUS_METRICS_PORT": str(critic_metrics)}
            procs.append(spawn(["worker", "critic"], critic_env, tmp_path / "critic-b.log"))

            async def done() -> bool:
                events = await events_of(real_redis, run_id)
                return bool(events) and events[-1].type == "done"

            await wait_for(done, within=120, interval=0.2)
            view = (await http.get(f"/api/v1/runs/{run_id}", headers=auth)).json()

            async def exported() -> bool:
                # Processes export in batches, a child's batch can arrive before its
                # parent's: wait until every parent but the caller's is in.
                spans = receiver.of_trace(CALLER_TRACE)
                ids = {s.span_id for s in spans} | {CALLER_SPAN}
                parents = all(s.parent_span_id in ids for s in spans)
                return bool(steps(spans, "finalizer") and steps(spans, "critic")) and parents

            await wait_for(exported, within=30, interval=0.2)
            finalizer_text = (await http.get(f"http://127.0.0.1:{finalizer_metrics}/metrics")).text
            critic_text = (await http.get(f"http://127.0.0.1:{critic_metrics}/metrics")).text

    spans = receiver.of_trace(CALLER_TRACE)
    by_id = {s.span_id: s for s in spans}
    # The edge continues the caller's trace; every span of the run is in it.
    # FastAPI's server spans continue the caller's (the GET of the run view sent it too).
    (request,) = [s for s in spans if s.name == "POST /api/v1/runs"]
    assert request.parent_span_id == CALLER_SPAN
    (edge,) = [s for s in spans if s.name == "run publish"]
    assert edge.attributes["agentbus.run_id"] == run_id
    assert by_id[edge.parent_span_id].parent_span_id == request.span_id  # fastapi.endpoint
    roles = {s.attributes["agentbus.role"] for s in spans if s.name.startswith("step ")}
    assert roles >= EVERY_ROLE, roles
    assert {s.service for s in spans} == {"agentbus"}
    # Correctly parented: each span's parent was received (only the request's is the
    # caller's), intake hangs off the edge, and each step off the step that published it.
    for s in spans:
        if s.parent_span_id != CALLER_SPAN:
            assert s.parent_span_id in by_id, (s.name, s.attributes)
    (intake,) = steps(spans, "intake")
    assert intake.parent_span_id == edge.span_id
    for s in spans:
        if s.name.startswith("step ") and s is not intake:
            assert by_id[s.parent_span_id].name.startswith("step "), s.name
            assert (
                s.attributes["agentbus.step"]
                == by_id[s.parent_span_id].attributes["agentbus.step"] + 1
                or s.attributes["agentbus.role"] == "retrieval"
            )
    # Children: model calls (GenAI attributes) under their step, the tool call, the store.
    chats = [s for s in spans if s.name == "chat scripted"]
    assert chats and all(by_id[c.parent_span_id].name.startswith("step ") for c in chats)
    assert all(c.attributes["gen_ai.usage.output_tokens"] > 0 for c in chats)
    streamed = [c for c in chats if by_id[c.parent_span_id].name == "step critic"]
    assert streamed and "gen_ai.response.time_to_first_token" in streamed[0].attributes
    tools = [s for s in spans if s.name == "execute_tool calculator"]  # research, fact-check
    assert len(tools) == 2
    for tool in tools:
        assert by_id[tool.parent_span_id].name == "step gateway"
        assert tool.attributes["agentbus.tool.status"] == "ok"
        assert tool.attributes["agentbus.tool.code"] == "ok"
        assert tool.attributes["agentbus.tool.risk"] == "LOW"
    assert {"store runs.create", "store runs.end"} <= {s.name for s in spans}
    # The SIGKILLed critic step shows as its redelivery, with the retry event.
    (critique,) = steps(spans, "critic")
    assert critique.attributes["messaging.message.delivery_count"] >= 2
    assert critique.attributes["agentbus.redelivered"] is True
    assert any(name == "step_retry" for name, _ in critique.events)
    # Cost: the run view, the done event, the trace and the metrics agree.
    usage = view["usage"]
    expected = round((usage["prompt_tokens"] * 0.5 + usage["completion_tokens"] * 1.5) / 1000, 6)
    assert view["cost_usd"] == pytest.approx(expected, abs=1e-5) and expected > 0
    events = await events_of(real_redis, run_id)
    assert narrow(Done, events[-1]).cost_usd == view["cost_usd"]
    (final,) = steps(spans, "finalizer")
    assert final.attributes["agentbus.run.cost_usd"] == view["cost_usd"]
    assert 'agentbus_runs_finished_total{mode="multi",status="done"} 1.0' in finalizer_text
    # The redelivered critic step's model call counts once, in the process that committed it.
    assert (
        'agentbus_model_calls_total{agent="critic",model="scripted",outcome="ok"} 1.0'
        in critic_text
    )
