"""Two tenants on one server: neither can see, follow or cancel the other's runs."""

from __future__ import annotations

import json

from tests.integration.api.conftest import StartApi, recv, until_done


async def test_another_tenants_run_is_not_found_everywhere(start_api: StartApi) -> None:
    api = await start_api()
    alice = api.auth(await api.key("tenant-a", "alice"))
    mallory_key = await api.key("tenant-b", "mallory")
    mallory = api.auth(mallory_key)
    run = await api.http.post(
        "/api/v1/runs", json={"question": "secret?", "conversation_id": "ca"}, headers=alice
    )
    run_id = run.json()["run_id"]
    mine = await api.ws(mallory_key)
    await mine.send(json.dumps({"type": "ask", "question": "mine"}))
    await recv(mine)
    await until_done(mine)

    probes = {
        "get": await api.http.get(f"/api/v1/runs/{run_id}", headers=mallory),
        "sse": await api.http.get(f"/api/v1/runs/{run_id}/events", headers=mallory),
        "cancel": await api.http.post(f"/api/v1/runs/{run_id}/cancel", headers=mallory),
        "conversation": await api.http.get("/api/v1/conversations/ca", headers=mallory),
    }
    await mine.send(json.dumps({"type": "join", "run_id": run_id}))
    joined = await recv(mine)
    await mine.send(json.dumps({"type": "cancel", "run_id": run_id}))
    cancelled = await recv(mine)
    listed = (await api.http.get("/api/v1/runs", headers=mallory)).json()["runs"]

    assert {name: r.status_code for name, r in probes.items()} == dict.fromkeys(probes, 404)
    never = await api.http.get("/api/v1/runs/never-existed", headers=mallory)
    assert probes["get"].json()["error"]["code"] == never.json()["error"]["code"]
    assert "secret" not in probes["get"].text
    assert (joined["type"], joined["code"]) == ("request_error", "run_not_found")
    assert (cancelled["type"], cancelled["code"]) == ("request_error", "run_not_found")
    assert run_id not in [r["id"] for r in listed]
    # Alice's run was neither cancelled nor disturbed.
    events = (await api.http.get(f"/api/v1/runs/{run_id}/events", headers=alice)).text
    assert '"status":"done"' in events
