"""A run and a conversation belong to their user; a tenant admin reads them, audited, and
changes none of them. On SQLite and on Postgres as a role that row-level security binds."""

from __future__ import annotations

from typing import Any

from bus.store import KeyRole
from tests.integration.api.conftest import StartApi
from tests.integration.api.owners import (
    api_reads,
    external,
    finished_run,
    intake_entries,
    paused_run,
    ws_reply,
)


async def test_an_admin_reads_every_users_runs_and_conversations_and_each_read_is_audited(
    start_api: StartApi, store_backend: dict[str, Any]
) -> None:
    api = await start_api(agent_human_gate=True, **store_backend)
    alice = await api.key("t1", "alice")
    admin_key = await api.key("t1", "root", KeyRole.ADMIN)
    admin = api.auth(admin_key)
    done = await finished_run(api, alice, "alice's question")
    conversation = done["conversation_id"]
    paused = await paused_run(api, alice, "alice again", conversation)
    # The owner's own reads are not oversight: nothing is written for them.
    await api.http.get(f"/api/v1/runs/{done['run_id']}", headers=api.auth(alice))
    await api.http.get(f"/api/v1/conversations/{conversation}", headers=api.auth(alice))
    assert await api_reads(api, admin_key) == []

    listed = (await api.http.get("/api/v1/runs", headers=admin)).json()["runs"]
    assert {(r["id"], r["subject"]) for r in listed} == {
        (done["run_id"], "alice"),
        (paused, "alice"),
    }
    run = await api.http.get(f"/api/v1/runs/{done['run_id']}", headers=admin)
    assert run.status_code == 200 and run.json()["question"] == "alice's question"
    events = await api.http.get(f"/api/v1/runs/{done['run_id']}/events", headers=admin)
    assert '"status":"done"' in events.text
    gate = await api.http.get(f"/api/v1/runs/{paused}/gate", headers=admin)
    assert gate.status_code == 200 and gate.json()["subject"] == "alice"
    thread = await api.http.get(f"/api/v1/conversations/{conversation}", headers=admin)
    assert thread.status_code == 200 and thread.json()["conversation"]["subject"] == "alice"
    convs = (await api.http.get("/api/v1/conversations", headers=admin)).json()
    assert [c["id"] for c in convs["conversations"]] == [conversation]
    joined = await ws_reply(api, admin_key, {"type": "join", "run_id": done["run_id"]})
    assert joined["type"] in ("run_started", "snapshot")

    reads = await api_reads(api, admin_key)
    assert sorted(r["tool"] for r in reads) == [
        "list_conversations",
        "list_runs",
        "read_conversation",
        "read_gate",
        "read_run",
        "read_run_events",
        "read_run_events",
    ]
    assert all(r["subject"] == "root" and r["args"]["owners"] == ["alice"] for r in reads)
    by_tool = {r["tool"]: r for r in reads}
    assert by_tool["read_run"]["run_id"] == done["run_id"]
    assert by_tool["read_conversation"]["call_id"] == conversation
    assert sorted(by_tool["list_runs"]["args"]["ids"]) == sorted([done["run_id"], paused])
    about = await api.http.get(f"/api/v1/audit?conversation_id={conversation}", headers=admin)
    assert "read_conversation" in {r["tool"] for r in about.json()["rows"]}
    # Alice sees her runs' rows, not the admin's reads of them.
    hers = (await api.http.get("/api/v1/audit", headers=api.auth(alice))).json()["rows"]
    assert hers and {r["subject"] for r in hers} == {"alice"}
    assert api.stores.audit is not None and (await api.stores.audit.verify("t1")).ok


async def test_an_admin_changes_nothing_of_another_users(
    start_api: StartApi, store_backend: dict[str, Any]
) -> None:
    api = await start_api(agent_human_gate=True, **store_backend)
    alice = await api.key("t1", "alice")
    admin_key = await api.key("t1", "root", KeyRole.ADMIN)
    admin = api.auth(admin_key)
    done = await finished_run(api, alice, "alice's question")
    conversation = done["conversation_id"]
    paused = await paused_run(api, alice, "alice again", conversation)
    before = await intake_entries(api)

    refusals = {
        "cancel": await api.http.post(f"/api/v1/runs/{paused}/cancel", headers=admin),
        "resume": await api.http.post(
            f"/api/v1/runs/{paused}/resume", json={"decision": "approve"}, headers=admin
        ),
        "delete": await api.http.delete(f"/api/v1/conversations/{conversation}", headers=admin),
        "continue": await api.http.post(
            "/api/v1/runs", json={"question": "q", "conversation_id": conversation}, headers=admin
        ),
    }
    frames = {
        "ws cancel": await ws_reply(api, admin_key, {"type": "cancel", "run_id": paused}),
        "ws ask": await ws_reply(
            api, admin_key, {"type": "ask", "question": "q", "conversation_id": conversation}
        ),
    }
    stream = await external(api, admin_key, question="q", conversation_id=conversation)

    assert {k: (r.status_code, r.json()["error"]["code"]) for k, r in refusals.items()} == {
        "cancel": (403, "not_owner"),
        "resume": (403, "gate_forbidden"),
        "delete": (403, "not_owner"),
        "continue": (403, "not_owner"),
    }
    assert {k: f["code"] for k, f in frames.items()} == {
        "ws cancel": "not_owner",
        "ws ask": "not_owner",
    }
    assert (stream.status, stream.stop_reason) == ("rejected", "not_owner")
    assert await intake_entries(api) == before  # nothing started
    mine = api.auth(alice)
    assert (await api.http.get(f"/api/v1/runs/{paused}", headers=mine)).json()["status"] == (
        "suspended"
    )
    thread = await api.http.get(f"/api/v1/conversations/{conversation}", headers=mine)
    assert thread.status_code == 200 and len(thread.json()["messages"]) == 2


async def test_the_owner_continues_and_deletes_their_conversation(
    start_api: StartApi, store_backend: dict[str, Any]
) -> None:
    api = await start_api(**store_backend)
    alice = await api.key("t1", "alice")
    first = await finished_run(api, alice, "first")
    second = await finished_run(api, alice, "second", first["conversation_id"])
    own_id = await finished_run(api, alice, "a conversation id of my choosing", "my-own-id")
    mine = api.auth(alice)

    assert second["conversation_id"] == first["conversation_id"]
    assert own_id["conversation_id"] == "my-own-id"
    url = f"/api/v1/conversations/{first['conversation_id']}"
    assert len((await api.http.get(url, headers=mine)).json()["messages"]) == 4
    assert (await api.http.delete(url, headers=mine)).status_code == 204
    assert (await api.http.get(url, headers=mine)).status_code == 404
    listed = (await api.http.get("/api/v1/conversations", headers=mine)).json()["conversations"]
    assert [c["id"] for c in listed] == ["my-own-id"]
