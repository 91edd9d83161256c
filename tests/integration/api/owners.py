"""Helpers for the ownership tests: runs of one user, and every way to poke at them."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from bus import keys
from bus.commands import RunResult
from tests.integration.api.conftest import Api, recv
from tests.support import wait_for


async def finished_run(
    api: Api, key: str, question: str, conversation_id: str | None = None
) -> dict[str, Any]:
    """Start a run and follow its events (SSE) to ``done``; its ``RunAccepted`` body."""
    body: dict[str, Any] = {"question": question}
    if conversation_id is not None:
        body["conversation_id"] = conversation_id
    started = await api.http.post("/api/v1/runs", json=body, headers=api.auth(key))
    assert started.status_code == 202, started.text
    accepted: dict[str, Any] = started.json()
    events = await api.http.get(accepted["events_url"], headers=api.auth(key))
    assert '"status":"done"' in events.text, events.text[-500:]
    return accepted


async def paused_run(api: Api, key: str, question: str, conversation_id: str) -> str:
    """Start a multi-mode run that stops at the answer gate (needs ``agent_human_gate``)."""
    body = {"question": question, "conversation_id": conversation_id, "settings": {"mode": "multi"}}
    started = await api.http.post("/api/v1/runs", json=body, headers=api.auth(key))
    assert started.status_code == 202, started.text
    run_id: str = started.json()["run_id"]
    async with asyncio.timeout(30):
        while True:
            got = await api.http.get(f"/api/v1/runs/{run_id}", headers=api.auth(key))
            if got.json()["status"] == "suspended":
                return run_id
            await asyncio.sleep(0.05)


async def ws_reply(api: Api, key: str, frame: dict[str, Any]) -> dict[str, Any]:
    """Send one frame on a fresh connection; the first frame that answers it."""
    conn = await api.ws(key)
    await conn.send(json.dumps({**frame, "request_id": "probe"}))
    return await recv(conn)


async def external(api: Api, key: str, **question: Any) -> RunResult:
    """Publish a question on ``runs.questions``; the reply on its own ``reply_to`` stream."""
    reply_to = f"probe.replies.{id(question)}"
    doc = {"api_key": key, "reply_to": reply_to, **question}
    await api.redis.xadd(keys.QUESTIONS_STREAM, {"data": json.dumps(doc)})

    async def answered() -> bool:
        return await api.redis.xlen(reply_to) > 0

    await wait_for(answered, within=30)
    [(_, fields)] = await api.redis.xrange(reply_to, count=1)
    return RunResult.model_validate_json(fields[b"data"])


async def intake_entries(api: Api) -> int:
    """How many commands were ever published to intake (what a refusal must not add to)."""
    return int(await api.redis.xlen(keys.role_stream(keys.Role.INTAKE, 0)))


async def api_reads(api: Api, admin: str) -> list[dict[str, Any]]:
    """The audit rows the API wrote about admins' reads, as the admin sees them."""
    rows = (await api.http.get("/api/v1/audit?limit=200", headers=api.auth(admin))).json()["rows"]
    return [r for r in rows if r["agent"] == "api"]
