"""The probe: another user and another tenant try every way in to one user's run and
conversation (REST, SSE, websocket, the external stream) and get nothing of it.

On SQLite and on Postgres as a role that row-level security binds.
"""

from __future__ import annotations

from typing import Any

import httpx

from bus.store import KeyRole
from tests.integration.api.conftest import StartApi
from tests.integration.api.owners import (
    external,
    finished_run,
    intake_entries,
    paused_run,
    ws_reply,
)

SECRET = "owner-secret-7f3a"  # in the owner's questions; must never reach a prober


async def test_a_second_user_and_a_second_tenant_find_nothing_of_the_first_user(
    start_api: StartApi, store_backend: dict[str, Any]
) -> None:
    api = await start_api(agent_human_gate=True, **store_backend)
    owner = await api.key("t1", "owner1")
    done = await finished_run(api, owner, f"first {SECRET}?")
    conversation = done["conversation_id"]
    paused = await paused_run(api, owner, f"second {SECRET}?", conversation)
    runs = [done["run_id"], paused]
    probers = {"same tenant": await api.key("t1", "intruder"), "other tenant": await api.key("t2")}
    before = await intake_entries(api)

    for who, key in probers.items():
        h = api.auth(key)
        answers: dict[str, httpx.Response] = {}
        for run_id in runs:
            answers |= {
                f"get {run_id}": await api.http.get(f"/api/v1/runs/{run_id}", headers=h),
                f"sse {run_id}": await api.http.get(f"/api/v1/runs/{run_id}/events", headers=h),
                f"cancel {run_id}": await api.http.post(f"/api/v1/runs/{run_id}/cancel", headers=h),
                f"audit {run_id}": await api.http.get(f"/api/v1/audit?run_id={run_id}", headers=h),
            }
        answers |= {
            "gate": await api.http.get(f"/api/v1/runs/{paused}/gate", headers=h),
            "resume": await api.http.post(
                f"/api/v1/runs/{paused}/resume", json={"decision": "approve"}, headers=h
            ),
            "conversation": await api.http.get(f"/api/v1/conversations/{conversation}", headers=h),
            "delete": await api.http.delete(f"/api/v1/conversations/{conversation}", headers=h),
            "continue": await api.http.post(
                "/api/v1/runs",
                json={"question": "mine now", "conversation_id": conversation},
                headers=h,
            ),
            "runs": await api.http.get("/api/v1/runs", headers=h),
            "conversations": await api.http.get("/api/v1/conversations", headers=h),
            "audit": await api.http.get("/api/v1/audit", headers=h),
            "audit by conversation": await api.http.get(
                f"/api/v1/audit?conversation_id={conversation}", headers=h
            ),
        }
        frames = {
            "ws join": await ws_reply(api, key, {"type": "join", "run_id": paused}),
            "ws cancel": await ws_reply(api, key, {"type": "cancel", "run_id": paused}),
            "ws resume": await ws_reply(
                api, key, {"type": "resume", "run_id": paused, "decision": "approve"}
            ),
            "ws ask": await ws_reply(
                api, key, {"type": "ask", "question": "mine", "conversation_id": conversation}
            ),
        }
        stream = await external(api, key, question="mine", conversation_id=conversation)

        lists = {"runs", "conversations", "audit", "audit by conversation"}
        lists |= {f"audit {r}" for r in runs}
        statuses = {name: r.status_code for name, r in answers.items()}
        assert statuses == {n: 200 if n in lists else 404 for n in answers}, (who, statuses)
        for name, response in answers.items():
            body = response.text
            assert SECRET not in body and "owner1" not in body, (who, name, body)
            if name in lists:
                assert all(r not in body for r in [*runs, conversation]), (who, name, body)
        assert {name: f["code"] for name, f in frames.items()} == {
            "ws join": "run_not_found",
            "ws cancel": "run_not_found",
            "ws resume": "gate_not_found",
            "ws ask": "conversation_not_found",
        }
        assert all(SECRET not in str(f) and "owner1" not in str(f) for f in frames.values())
        assert (stream.status, stream.stop_reason) == ("rejected", "conversation_not_found")

    # Nothing was started, nothing of the owner's changed, and the owner carries on.
    assert await intake_entries(api) == before
    mine = api.auth(owner)
    assert (await api.http.get(f"/api/v1/runs/{paused}", headers=mine)).json()["status"] == (
        "suspended"
    )
    resumed = await api.http.post(
        f"/api/v1/runs/{paused}/resume", json={"decision": "approve"}, headers=mine
    )
    assert resumed.status_code == 200, resumed.text
    events = await api.http.get(f"/api/v1/runs/{paused}/events", headers=mine)
    assert '"status":"done"' in events.text
    thread = await api.http.get(f"/api/v1/conversations/{conversation}", headers=mine)
    assert [m["content"] for m in thread.json()["messages"][::2]] == [
        f"first {SECRET}?",
        f"second {SECRET}?",
    ]
    for key in probers.values():
        assert (await api.http.get("/api/v1/runs", headers=api.auth(key))).json()["runs"] == []
    admin = await api.key("t1", "root", KeyRole.ADMIN)
    listed = (await api.http.get("/api/v1/runs", headers=api.auth(admin))).json()["runs"]
    assert sorted(r["id"] for r in listed) == sorted(runs)
