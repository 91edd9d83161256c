"""The ``multitask`` policy across processes: two API replicas, and a SIGKILL of everything.

``agentbus up`` (its API, every role, the embedded Redis) and a second ``agentbus api``
process share the data folder: a question refused or queued by one replica is decided by
the turn the other admitted, because the "in flight" check and the queue are rows in the
SQL store under a per-conversation lock, not process memory. Then a queued question
survives a SIGKILL of every process and runs exactly once after the restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from bus import embedded
from tests.e2e.test_up import embedded_env, until_up
from tests.processes import cli, free_port, processes, spawn
from tests.support import wait_for


async def ready(http: httpx.AsyncClient) -> bool:
    try:
        return (await http.get("/readyz")).status_code == 200
    except httpx.HTTPError:
        return False


async def ended(http: httpx.AsyncClient, auth: dict[str, str], run_id: str) -> dict[str, Any]:
    async with asyncio.timeout(120):
        while True:
            with contextlib.suppress(httpx.HTTPError):
                run = (await http.get(f"/api/v1/runs/{run_id}", headers=auth)).json()
                if run.get("status") not in ("queued", "running", None):
                    return run
            await asyncio.sleep(0.2)


async def ask(
    http: httpx.AsyncClient, auth: dict[str, str], question: str, conversation: str | None, **s: Any
) -> httpx.Response:
    body: dict[str, Any] = {"question": question, "settings": s}
    if conversation:
        body["conversation_id"] = conversation
    return await http.post("/api/v1/runs", json=body, headers=auth)


@pytest.mark.timeout(400)
async def test_two_api_processes_share_one_turn_per_conversation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    up_port, api_port = free_port(), free_port()
    data, env = embedded_env(
        tmp_path,
        monkeypatch,
        AGENTBUS_LLM="scripted",
        AGENTBUS_LLM_TOKEN_DELAY_S="0.1",
        AGENTBUS_API_PORT=str(up_port),
    )
    with processes() as procs:
        procs.append(spawn(["up"], env, tmp_path / "up.log"))
        await until_up(data, tmp_path / "up.log")
        procs.append(spawn(["api", "--port", str(api_port)], env, tmp_path / "api.log"))
        key = (await cli(["keys", "create", "--tenant", "acme", "--subject", "ops"], env)).strip()
        auth = {"Authorization": f"Bearer {key}"}
        a = httpx.AsyncClient(base_url=f"http://127.0.0.1:{up_port}", timeout=30)
        b = httpx.AsyncClient(base_url=f"http://127.0.0.1:{api_port}", timeout=30)
        async with a, b:
            for http in (a, b):
                await wait_for(lambda http=http: ready(http), within=90, interval=0.2)
            first = (await ask(a, auth, "What is 23 × 19?", None)).json()
            conversation = first["conversation_id"]

            refused = await ask(b, auth, "And 24 × 19?", conversation, multitask="reject")
            queued = await ask(b, auth, "And 25 × 19?", conversation)
            q1 = await ended(a, auth, first["run_id"])
            q2 = await ended(a, auth, queued.json()["run_id"])
            events = (await b.get(f"/api/v1/runs/{q2['id']}/events", headers=auth)).text
            detail = (await a.get(f"/api/v1/conversations/{conversation}", headers=auth)).json()

    assert refused.status_code == 409, refused.text
    assert refused.json()["error"]["code"] == "conversation_busy"
    assert queued.status_code == 202 and queued.json()["queued"] is True
    assert q1["status"] == q2["status"] == "done"
    assert q2["created_at"] < q1["finished_at"]  # asked while the first ran...
    assert events.count('"type":"run_started"') == 1 and events.count('"type":"done"') == 1
    questions = [m["content"] for m in detail["messages"] if m["role"] == "user"]
    assert questions == ["What is 23 × 19?", "And 25 × 19?"]  # ...and answered after it
    assert detail["pending"] == []


@pytest.mark.timeout(400)
async def test_a_queued_question_survives_a_sigkill_of_every_process_and_runs_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()
    data, env = embedded_env(
        tmp_path,
        monkeypatch,
        AGENTBUS_LLM="scripted",
        AGENTBUS_LLM_TOKEN_DELAY_S="0.2",
        AGENTBUS_API_PORT=str(port),
        AGENTBUS_CLAIM_IDLE_MS="2000",
    )
    base = f"http://127.0.0.1:{port}"
    with processes() as procs:
        first_up = spawn(["up"], env, tmp_path / "up1.log")
        procs.append(first_up)
        await until_up(data, tmp_path / "up1.log")
        key = (await cli(["keys", "create", "--tenant", "acme", "--subject", "ops"], env)).strip()
        auth = {"Authorization": f"Bearer {key}"}
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            await wait_for(lambda: ready(http), within=90, interval=0.2)
            first = (await ask(http, auth, "What is 23 × 19?", None)).json()
            conversation = first["conversation_id"]
            second = (await ask(http, auth, "And 25 × 19?", conversation)).json()
            assert second["queued"] is True

            async def streaming() -> bool:
                text = (await http.get(f"/api/v1/runs/{first['run_id']}", headers=auth)).text
                return '"status":"running"' in text

            await wait_for(streaming, within=60, interval=0.1)
        redis_pid = int((data / "redis" / embedded.PIDFILE_NAME).read_text().strip())
        killed_at = datetime.now(UTC)
        first_up.send_signal(signal.SIGKILL)
        first_up.wait(10)
        with contextlib.suppress(ProcessLookupError):
            os.kill(redis_pid, signal.SIGKILL)

        async def redis_gone() -> bool:
            return not embedded.is_running(data)

        await wait_for(redis_gone, within=20)

        # Only the first run before the kill needs a slow answer: it is still running then.
        fast = {**env, "AGENTBUS_LLM_TOKEN_DELAY_S": "0.02"}
        procs.append(spawn(["up"], fast, tmp_path / "up2.log"))
        await until_up(data, tmp_path / "up2.log")
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            await wait_for(lambda: ready(http), within=90, interval=0.2)
            q1 = await ended(http, auth, first["run_id"])
            q2 = await ended(http, auth, second["run_id"])
            events = (await http.get(f"/api/v1/runs/{q2['id']}/events", headers=auth)).text
            detail = (await http.get(f"/api/v1/conversations/{conversation}", headers=auth)).json()

    assert q1["status"] == "done" and q2["status"] == "done"
    # Both were in flight across the kill: the first one running, the second one queued.
    assert datetime.fromisoformat(q1["finished_at"]) > killed_at
    assert datetime.fromisoformat(q2["created_at"]) < killed_at
    assert events.count('"type":"done"') == 1
    assert events.count('"type":"run_started"') == 1  # the queued run started once
    turns = [(m["role"], m["run_id"]) for m in detail["messages"]]
    assert turns == [
        ("user", first["run_id"]),
        ("assistant", first["run_id"]),
        ("user", second["run_id"]),
        ("assistant", second["run_id"]),
    ]
