"""Long-term memory through a running API with every role (memory and recorder included):
what a user says about themselves is remembered, given to their later runs as notes, and
theirs alone to list, edit and delete; an admin can switch it off for the tenant."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from agents.llm.scripted import ScriptedLLM
from agents.model_input import NOTES_HEADER
from bus import keys
from bus.store import KeyRole
from tests.integration.api.conftest import Api, StartApi
from tests.integration.api.test_cli_remote import run_cli
from tests.integration.api.test_rest import wait_status
from tests.support import wait_for


async def ask(api: Api, key: str, question: str, conversation: str | None = None) -> str:
    """Ask over REST and wait for the run to end; its id."""
    body: dict[str, Any] = {"question": question}
    if conversation:
        body["conversation_id"] = conversation
    resp = await api.http.post("/api/v1/runs", json=body, headers=api.auth(key))
    assert resp.status_code == 202, resp.text
    run_id = resp.json()["run_id"]
    assert (await wait_status(api, key, run_id))["status"] == "done"
    return run_id


async def memories(api: Api, key: str) -> list[dict[str, Any]]:
    resp = await api.http.get("/api/v1/memories", headers=api.auth(key))
    assert resp.status_code == 200, resp.text
    return resp.json()["memories"]


async def remembered(api: Api, key: str, word: str) -> list[dict[str, Any]]:
    """The user's memories once one mentions ``word`` (the recorder writes them soon after
    the run is done)."""

    async def found() -> bool:
        return any(word in m["text"] for m in await memories(api, key))

    await wait_for(found, within=20, interval=0.05)
    return await memories(api, key)


def notes_seen(llm: ScriptedLLM) -> list[str]:
    """The notes about the user each model request carried ('' when it had none)."""
    seen: list[str] = []
    for messages, _, _ in llm.requests:
        notes = [m.content for m in messages if m.role == "system" and NOTES_HEADER in m.content]
        seen.append(notes[0] if notes else "")
    return seen


async def test_a_statement_is_remembered_and_given_to_the_users_later_runs_only(
    start_api: StartApi, store_backend: dict[str, Any]
) -> None:
    llm = ScriptedLLM(cycle=True)
    api = await start_api(llm, **store_backend)
    alice, bob = await api.key(subject="alice"), await api.key(subject="bob")
    carol = await api.key(tenant="t2", subject="alice")  # same name, another tenant
    admin = await api.key(subject="root", role=KeyRole.ADMIN)

    first = await ask(api, alice, "I work in the Lisbon office. What is 23 × 19?")
    [memory] = await remembered(api, alice, "Lisbon")
    assert memory["topic"] == "workplace" and memory["run_id"] == first
    assert memory["text"] == "The user works in the Lisbon office."
    assert memory["message_id"] is not None and memory["conversation_id"]

    # Another conversation of hers is given the note; nobody else's run is.
    llm.requests.clear()
    await ask(api, alice, "Where should I park tomorrow?")
    assert any("The user works in the Lisbon office." in n for n in notes_seen(llm))
    llm.requests.clear()
    await ask(api, bob, "Where should I park tomorrow?")
    await ask(api, carol, "Where should I park tomorrow?")
    assert not any("Lisbon" in n for n in notes_seen(llm))

    # Only she lists or changes it: another user, another tenant, the tenant's admin: 404.
    for other in (bob, carol, admin):
        assert await memories(api, other) == []
        path = f"/api/v1/memories/{memory['id']}"
        edit = await api.http.patch(path, json={"text": "x"}, headers=api.auth(other))
        gone = await api.http.delete(path, headers=api.auth(other))
        assert (edit.status_code, edit.json()["error"]["code"]) == (404, "memory_not_found")
        assert (gone.status_code, gone.json()["error"]["code"]) == (404, "memory_not_found")
    assert [m["id"] for m in await memories(api, alice)] == [memory["id"]]


async def test_a_newer_statement_replaces_an_edit_shows_and_a_delete_removes(
    start_api: StartApi,
) -> None:
    llm = ScriptedLLM(cycle=True)
    api = await start_api(llm)
    alice = await api.key(subject="alice")
    await ask(api, alice, "I work in the Lisbon office.")
    await remembered(api, alice, "Lisbon")
    moved = await ask(api, alice, "I moved to the Porto office, where is parking?")
    [memory] = await remembered(api, alice, "Porto")
    assert memory["run_id"] == moved and "Lisbon" not in memory["text"]

    path = f"/api/v1/memories/{memory['id']}"
    empty = await api.http.patch(path, json={"text": "  "}, headers=api.auth(alice))
    assert (empty.status_code, empty.json()["error"]["code"]) == (422, "invalid_request")
    edited = await api.http.patch(
        path, json={"text": "Works from home on Fridays."}, headers=api.auth(alice)
    )
    assert edited.status_code == 200 and edited.json()["edited"] is True
    llm.requests.clear()
    await ask(api, alice, "Is the office open on Friday?")
    assert any("Works from home on Fridays." in n for n in notes_seen(llm))

    assert (await api.http.delete(path, headers=api.auth(alice))).status_code == 204
    assert await memories(api, alice) == []
    llm.requests.clear()
    await ask(api, alice, "Is the office open on Friday?")
    assert notes_seen(llm) and not any(notes_seen(llm))


async def test_a_statement_in_another_language_replaces_the_english_one(
    start_api: StartApi,
) -> None:
    llm = ScriptedLLM(cycle=True)
    api = await start_api(llm)
    alice = await api.key(subject="alice")
    await ask(api, alice, "I work in the Lisbon office. Please answer in English.")
    await remembered(api, alice, "Lisbon")
    await ask(api, alice, "Ich arbeite jetzt im Büro in Berlin. Wo kann ich parken?")
    await remembered(api, alice, "Berlin")
    await ask(api, alice, "Responde em português, por favor.")
    found = await remembered(api, alice, "Portuguese")
    assert sorted((m["topic"], m["text"]) for m in found) == [
        ("language", "Answer the user in Portuguese."),
        # Kept in the user's language, as said, never half-translated.
        ("workplace", "Ich arbeite jetzt im Büro in Berlin."),
    ]


async def test_an_admin_switches_memory_off_nothing_is_extracted_or_retrieved(
    start_api: StartApi,
) -> None:
    llm = ScriptedLLM(cycle=True)
    api = await start_api(llm)
    alice = await api.key(subject="alice")
    admin = await api.key(subject="root", role=KeyRole.ADMIN)
    await ask(api, alice, "Please answer in Portuguese.")
    await remembered(api, alice, "Portuguese")

    off = await api.http.put("/api/v1/settings", json={"memory": False}, headers=api.auth(admin))
    assert off.status_code == 200 and off.json()["effective"]["memory"] is False
    memory_stream = keys.role_stream(keys.Role.MEMORY, 0)
    sent = await api.redis.xlen(memory_stream)
    llm.requests.clear()
    await ask(api, alice, "Call me Ana. What is 23 × 19?")
    # The run is done and its finalizer committed: no memory step was sent.
    assert await api.redis.xlen(memory_stream) == sent
    assert not any(notes_seen(llm))
    await asyncio.sleep(0.5)  # and nothing arrives late
    assert [m["topic"] for m in await memories(api, alice)] == ["language"]

    # A user cannot switch it back on: the setting is the admin's.
    refused = await api.http.put("/api/v1/settings", json={"memory": True}, headers=api.auth(alice))
    assert refused.status_code == 403


@pytest.mark.parametrize("mode", ["multi"])
async def test_multi_mode_gathers_the_memory_source(start_api: StartApi, mode: str) -> None:
    llm = ScriptedLLM(cycle=True)
    api = await start_api(llm, agent_mode=mode)
    alice = await api.key(subject="alice")
    await ask(api, alice, "My team is Payments.")
    await remembered(api, alice, "Payments")
    llm.requests.clear()
    run_id = await ask(api, alice, "Which team handles refunds?")
    run = (await api.http.get(f"/api/v1/runs/{run_id}", headers=api.auth(alice))).json()
    cited = [
        item
        for entry in run["trace"]
        if entry.get("type") == "citations"
        for item in entry.get("items", [])
    ]
    assert any(c["source"].startswith("memory:") for c in cited), run["trace"]


@pytest.mark.timeout(300)
async def test_the_cli_lists_edits_and_deletes_the_cli_users_memories(
    start_api: StartApi,
) -> None:
    api = await start_api()
    alice = await api.key(subject="alice")
    await ask(api, alice, "I work in the Lisbon office.")
    [memory] = await remembered(api, alice, "Lisbon")
    env = {"AGENTBUS_DATA_DIR": str(api.settings.bus.data_dir), "AGENTBUS_TENANT": "t1"}
    as_alice, as_bob = env | {"AGENTBUS_SUBJECT": "alice"}, env | {"AGENTBUS_SUBJECT": "bob"}

    listed = await run_cli(["memory", "list", "--json"], as_alice)
    bobs = await run_cli(["memory", "list"], as_bob)
    stolen = await run_cli(["memory", "delete", memory["id"]], as_bob)
    edited = await run_cli(["memory", "edit", memory["id"], "Works from home."], as_alice)
    empty = await run_cli(["memory", "edit", memory["id"], " "], as_alice)

    assert listed[0] == 0 and [json.loads(line)["id"] for line in listed[1].splitlines()] == [
        memory["id"]
    ]
    assert bobs == (0, "", "")
    assert stolen[0] == 2 and "error [memory_not_found]" in stolen[2]
    assert edited[0] == 0 and "Works from home. (edited)" in edited[1]
    assert empty[0] == 2 and "error [invalid_request]" in empty[2]
    assert [m["text"] for m in await memories(api, alice)] == ["Works from home."]
    deleted = await run_cli(["memory", "delete", memory["id"]], as_alice)
    assert deleted[0] == 0 and await memories(api, alice) == []
