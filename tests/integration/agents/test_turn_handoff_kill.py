"""A question queued behind its conversation's running run starts exactly once, however
the finalizer of the run before it dies.

The finalizer ends the run, appends its question and answer and ends its turn, promoting
the queued question, in one transaction; the run-end hook then publishes the promoted
question; then the step commits. The finalizer process SIGKILLs itself between those
points (`api.compose.faults`): after the transaction (nothing published yet), and after
the publish (the step not committed). Another finalizer takes the step over: the end is
written once, and the queued question reaches the intake once and runs once.

Every role and the API run in processes of their own, on the real Redis and one SQLite
store.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import httpx
import pytest
from redis.asyncio import Redis

from bus import keys
from tests.processes import cli, free_port, process_env, processes, spawn
from tests.support import events_of, stream_commands, until_serving, wait_for

ROLES = ["intake", "researcher", "gateway"]
QUESTION = "What is 23 × 19?"


async def ended(http: httpx.AsyncClient, auth: dict[str, str], run_id: str) -> dict[str, Any]:
    async with asyncio.timeout(120):
        while True:
            with contextlib.suppress(httpx.HTTPError):
                run = (await http.get(f"/api/v1/runs/{run_id}", headers=auth)).json()
                if run.get("status") not in ("queued", "running", None):
                    return run
            await asyncio.sleep(0.2)


@pytest.mark.timeout(300)  # five processes start on a busy 2-core host
@pytest.mark.parametrize("point", ["after_run_end", "after_handoff"])
async def test_a_queued_question_starts_once_when_the_finalizer_before_it_is_killed(
    real_redis: Redis, tmp_path: Path, point: str
) -> None:
    port = free_port()
    env = await process_env(
        tmp_path,
        AGENTBUS_LLM="scripted",
        AGENTBUS_LLM_TOKEN_DELAY_S="0.1",  # the first run still answers when the second asks
        AGENTBUS_CLAIM_IDLE_MS="1000",
        AGENTBUS_HEARTBEAT_MS="200",
        AGENTBUS_READ_BLOCK_MS="100",
    )
    once = tmp_path / "fired"
    dying = env | {
        "AGENTBUS_TEST_FAULTS": "1",
        "AGENTBUS_FAULT_POINT": point,
        "AGENTBUS_FAULT_ONCE": str(once),
    }
    with processes() as procs:
        procs.append(spawn(["worker", *ROLES], env, tmp_path / "workers.log"))
        first = spawn(["worker", "finalizer"], dying, tmp_path / "finalizer-a.log")
        procs.append(first)
        procs.append(spawn(["api", "--port", str(port)], env, tmp_path / "api.log"))
        key = (await cli(["keys", "create", "--tenant", "t1", "--subject", "alice"], env)).strip()
        auth = {"Authorization": f"Bearer {key}"}
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            await until_serving(real_redis, [*ROLES, "finalizer"], http)
            asked = await http.post("/api/v1/runs", json={"question": QUESTION}, headers=auth)
            q1, conversation = asked.json()["run_id"], asked.json()["conversation_id"]
            body = {"question": QUESTION, "conversation_id": conversation}
            waiting = (await http.post("/api/v1/runs", json=body, headers=auth)).json()
            assert waiting["queued"] is True, waiting
            q2 = waiting["run_id"]

            async def fired() -> bool:
                return once.exists()

            await wait_for(fired, within=120)
            assert first.wait(10) < 0  # it killed itself at the point, mid-step
            procs.append(spawn(["worker", "finalizer"], dying, tmp_path / "finalizer-b.log"))

            runs = [await ended(http, auth, q1), await ended(http, auth, q2)]
            found = await http.get(f"/api/v1/conversations/{conversation}", headers=auth)

    assert [r["status"] for r in runs] == ["done", "done"]
    intake = [c.run_id for c in await stream_commands(real_redis, keys.Role.INTAKE)]
    assert intake.count(q2) == 1  # published once, whoever published it
    for run_id in (q1, q2):
        kinds = [e.type for e in await events_of(real_redis, run_id)]
        assert kinds.count("run_started") == kinds.count("done") == 1, kinds
    messages = [(m["role"], m["run_id"]) for m in found.json()["messages"]]
    assert messages == [("user", q1), ("assistant", q1), ("user", q2), ("assistant", q2)]
