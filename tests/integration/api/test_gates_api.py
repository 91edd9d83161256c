"""Resuming paused runs over REST and the websocket; per-agent config; the graph."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from agents.llm.scripted import ScriptedLLM
from bus.store import KeyRole
from tests.integration.api.conftest import Api, StartApi, recv, until_done


async def paused(api: Api, key: str, question: str = "What is 23 × 19?") -> str:
    run = await api.http.post("/api/v1/runs", json={"question": question}, headers=api.auth(key))
    assert run.status_code in (200, 201, 202), run.text
    run_id = run.json()["run_id"]
    async with asyncio.timeout(20):
        while True:
            got = (await api.http.get(f"/api/v1/runs/{run_id}", headers=api.auth(key))).json()
            if got["status"] == "suspended":
                return run_id
            await asyncio.sleep(0.05)


async def gated_tenant(api: Api) -> tuple[str, str]:
    admin = await api.key("t1", "root", KeyRole.ADMIN)
    prefs = {"mode": "multi", "human_gate": True}
    put = await api.http.put("/api/v1/settings", json=prefs, headers=api.auth(admin))
    assert put.status_code == 200, put.text
    return admin, await api.key("t1", "alice")


async def test_resume_over_rest_checks_tenant_subject_verb_and_once(start_api: StartApi) -> None:
    api = await start_api()
    admin, alice = await gated_tenant(api)
    run_id = await paused(api, alice)
    url = f"/api/v1/runs/{run_id}/resume"

    async def resume(key: str, decision: str) -> Any:
        return await api.http.post(url, json={"decision": decision}, headers=api.auth(key))

    other_tenant = await api.key("t2", "alice")
    other_user = await api.key("t1", "bob")
    gate = await api.http.get(f"/api/v1/runs/{run_id}/gate", headers=api.auth(alice))
    assert gate.status_code == 200 and gate.json()["reason"] == "approve_answer"
    hidden = await api.http.get(f"/api/v1/runs/{run_id}/gate", headers=api.auth(other_tenant))
    assert hidden.status_code == 404
    assert (await resume(other_tenant, "approve")).status_code == 404
    unseen = await resume(other_user, "approve")  # another user: as if it did not exist
    assert unseen.status_code == 404 and unseen.json()["error"]["code"] == "gate_not_found"
    admin_gate = await api.http.get(f"/api/v1/runs/{run_id}/gate", headers=api.auth(admin))
    assert admin_gate.status_code == 200 and admin_gate.json()["subject"] == "alice"
    forbidden = await resume(admin, "approve")  # an admin sees it but may not decide it
    assert forbidden.status_code == 403 and forbidden.json()["error"]["code"] == "gate_forbidden"
    assert (await resume(alice, "egress_deny")).status_code == 422
    for bad in ("", "x" * 33):  # refused as a field, not a server error (found by fuzzing)
        refused = await resume(alice, bad)
        assert refused.status_code == 422 and refused.json()["error"]["field"] == "decision"
    assert (await resume(alice, "approve")).status_code == 200
    again = await resume(alice, "approve")
    assert again.status_code == 409 and again.json()["error"]["code"] == "gate_conflict"
    events = (await api.http.get(f"/api/v1/runs/{run_id}/events", headers=api.auth(alice))).text
    assert '"type":"approval_request"' in events and '"status":"done"' in events


async def test_resume_frame_over_the_websocket(start_api: StartApi) -> None:
    api = await start_api()
    _, alice = await gated_tenant(api)
    run_id = await paused(api, alice)
    conn = await api.ws(alice)
    await conn.send(json.dumps({"type": "join", "run_id": run_id}))
    async with asyncio.timeout(10):
        while (await recv(conn))["type"] != "approval_request":
            pass
    await conn.send(json.dumps({"type": "resume", "run_id": run_id, "decision": "reject"}))
    frames = await until_done(conn)
    assert any(f["type"] == "resumed" for f in frames)
    assert frames[-1]["status"] == "rejected"


async def test_agents_config_overrides_prompts_and_rejects_unknown_agents(
    start_api: StartApi,
) -> None:
    llm = ScriptedLLM()
    api = await start_api(llm)
    admin = await api.key("t1", "root", KeyRole.ADMIN)
    user = await api.key("t1", "alice")
    config = (await api.http.get("/api/v1/agents/config", headers=api.auth(user))).json()
    assert [a["name"] for a in config["agents"]] == ["planner", "researcher", "critic", "verifier"]
    bad = await api.http.put(
        "/api/v1/agents/config",
        json={"agents": [{"name": "poet", "prompt": "rhyme"}]},
        headers=api.auth(admin),
    )
    assert bad.status_code == 422 and "poet" in bad.json()["error"]["message"]
    denied = await api.http.put("/api/v1/agents/config", json={}, headers=api.auth(user))
    assert denied.status_code == 403
    planner = "You are the planner. Always plan in exactly one step."
    ok = await api.http.put(
        "/api/v1/agents/config",
        json={"agents": [{"name": "planner", "prompt": planner}]},
        headers=api.auth(admin),
    )
    assert ok.status_code == 200
    await api.http.put("/api/v1/settings", json={"mode": "multi"}, headers=api.auth(admin))
    run = await api.http.post("/api/v1/runs", json={"question": "23 × 19?"}, headers=api.auth(user))
    events = await api.http.get(
        f"/api/v1/runs/{run.json()['run_id']}/events", headers=api.auth(user)
    )
    assert '"status":"done"' in events.text
    systems = [r[0][0].content for r in llm.requests]
    assert any(s.startswith(planner) for s in systems)  # the date follows the prompt
    graph = (await api.http.get("/api/v1/graph?mode=multi", headers=api.auth(user))).json()
    assert graph["mermaid"].startswith("flowchart LR") and "critic" in graph["mermaid"]
