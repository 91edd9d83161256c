"""CRITICAL tools: a tenant admin approves them (audited), a run asks for them by name.

The gateway runs one only when both said yes; anything else is refused with a code, and a
run asking for a tool its tenant never approved is refused before anything is published.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from agents.llm.ports import ChatMessage, LLMOptions, ToolDefinition
from agents.llm.scripted import ScriptedLLM, Turn, text, tool_call, turn
from api.streams.admission import run_id_for
from bus import keys
from bus.commands import AgentTask, Command, RunSettings, RunState, deadline_in, new_run_id
from bus.publish import publish, read_events
from bus.store import KeyRole, Scope
from tests.integration.api import critical_plugin
from tests.integration.api.conftest import StartApi, recv, until_done
from tests.integration.api.test_admission import reply
from tests.integration.api.test_rest import sse
from tests.support import events_of, stream_commands

PLUGIN = "tests.integration.api.critical_plugin:tools"
WIPE = "wipe_cache"


def wiper(
    messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
) -> Turn:
    """The model calls wipe_cache once, then answers."""
    if messages[-1].role == "tool" or not any(t.name == WIPE for t in tools):
        return turn(text("Done."))
    return turn(tool_call(WIPE, {}))


@pytest.fixture(autouse=True)
def _no_calls_yet() -> None:
    critical_plugin.CALLS.clear()


def outcome(events: list[dict[str, Any]]) -> tuple[str, str]:
    [result] = [e for e in events if e["type"] == "tool_result" and e["tool"] == WIPE]
    return result["status"], result["code"]


async def approve(api: Any, tenant: str, tools: list[str] | None) -> Any:
    admin = await api.key(tenant, "root", KeyRole.ADMIN)
    body = {} if tools is None else {"approved_critical_tools": tools}
    return await api.http.put("/api/v1/settings", json=body, headers=api.auth(admin))


async def ask_rest(api: Any, key: str, **settings: Any) -> list[dict[str, Any]]:
    body = {"question": "Wipe the cache.", "settings": settings}
    run = await api.http.post("/api/v1/runs", json=body, headers=api.auth(key))
    assert run.status_code == 202, run.text
    return await sse(api, key, run.json()["run_id"])


async def test_a_critical_tool_runs_only_when_the_tenant_approved_it_and_the_run_asked(
    start_api: StartApi,
) -> None:
    api = await start_api(ScriptedLLM(wiper), tool_plugins=PLUGIN)
    assert (await approve(api, "t1", [WIPE])).status_code == 200
    alice = await api.key("t1", "alice")

    asked = await ask_rest(api, alice, approve_critical=[WIPE])
    assert outcome(asked) == ("ok", "ok") and critical_plugin.CALLS == ["wiped"]

    not_asked = await ask_rest(api, alice)
    blanket = await ask_rest(api, alice, approve_high_risk=True)
    assert outcome(not_asked) == outcome(blanket) == ("refused", "approval_required")
    assert critical_plugin.CALLS == ["wiped"]  # refused calls never ran

    conn = await api.ws(alice)
    ask = {"type": "ask", "question": "Wipe it.", "settings": {"approve_critical": [WIPE]}}
    await conn.send(json.dumps(ask))
    assert (await recv(conn))["type"] == "accepted"
    assert outcome(await until_done(conn)) == ("ok", "ok")

    data = {"api_key": alice, "question": "Wipe it.", "reply_to": "ops"}
    entry = await api.redis.xadd(
        keys.QUESTIONS_STREAM,
        {"data": json.dumps(data | {"settings": {"approve_critical": [WIPE]}})},
    )
    [result] = await reply(api, "ops")
    events = await events_of(api.redis, run_id_for(entry.decode()))
    assert result.status == "done"
    assert outcome([e.model_dump(mode="json") for e in events]) == ("ok", "ok")
    assert critical_plugin.CALLS == ["wiped"] * 3


async def test_asking_for_an_unapproved_critical_tool_is_refused_before_anything_starts(
    start_api: StartApi,
) -> None:
    api = await start_api(ScriptedLLM(wiper), tool_plugins=PLUGIN)
    assert (await approve(api, "t1", [WIPE])).status_code == 200  # t1, not t2
    bob = await api.key("t2", "bob")
    settings = {"approve_critical": [WIPE]}

    rest = await api.http.post(
        "/api/v1/runs", json={"question": "q", "settings": settings}, headers=api.auth(bob)
    )
    conn = await api.ws(bob)
    await conn.send(json.dumps({"type": "ask", "question": "q", "settings": settings}))
    frame = await recv(conn)
    data = {"api_key": bob, "question": "q", "reply_to": "ops", "settings": settings}
    await api.redis.xadd(keys.QUESTIONS_STREAM, {"data": json.dumps(data)})
    [result] = await reply(api, "ops")

    assert rest.status_code == 403
    assert rest.json()["error"]["code"] == "critical_tool_not_approved"
    assert rest.json()["error"]["field"] == "settings.approve_critical"
    assert (frame["type"], frame["code"]) == ("request_error", "critical_tool_not_approved")
    assert (result.status, result.stop_reason) == ("rejected", "critical_tool_not_approved")
    # Nothing half-written: no run, no rate token, no quota slot, no tool call.
    assert await stream_commands(api.redis, keys.Role.INTAKE) == []
    assert not await api.redis.exists(keys.tenant_rate("t2"), keys.tenant_active_runs("t2"))
    runs = await api.http.get("/api/v1/runs", headers=api.auth(bob))
    assert runs.json()["runs"] == [] and critical_plugin.CALLS == []


async def test_the_gateway_refuses_a_tool_the_tenant_did_not_approve_even_if_asked(
    start_api: StartApi,
) -> None:
    # `agentbus ask` and `tools call` publish straight to the bus: no admission check, so
    # the gateway's own check is the one that holds.
    api = await start_api(ScriptedLLM(wiper), tool_plugins=PLUGIN)
    run_id = new_run_id()
    command = Command(
        run_id=run_id,
        tenant_id="t1",
        subject="cli",
        role=keys.Role.INTAKE,
        deadline=deadline_in(30),
        payload=AgentTask(
            state=RunState(question="Wipe.", settings=RunSettings(approve_critical=[WIPE]))
        ),
    )
    await publish(api.redis, command, api.settings.bus)
    events = [e.model_dump(mode="json") async for _, e in read_events(api.redis, run_id, 0)]

    assert outcome(events) == ("refused", "critical_tool_not_approved")
    assert critical_plugin.CALLS == []


async def test_approvals_are_admin_only_kept_unless_given_and_every_change_is_audited(
    start_api: StartApi,
) -> None:
    api = await start_api(tool_plugins=PLUGIN)
    user = await api.key("t1", "alice")

    denied = await api.http.put(
        "/api/v1/settings", json={"approved_critical_tools": [WIPE]}, headers=api.auth(user)
    )
    invalid = await approve(api, "t1", ["not a tool name"])
    assert (denied.status_code, denied.json()["error"]["code"]) == (403, "admin_only")
    assert invalid.status_code == 422
    assert api.stores.audit is not None
    assert (
        await api.stores.audit.count("t1") == 0
        and await api.stores.tenant_settings.get("t1") is None
    )

    approved = await approve(api, "t1", [WIPE, "deploy_prod"])
    kept = await approve(api, "t1", None)  # another settings change: approvals stay
    withdrawn = await approve(api, "t1", ["deploy_prod"])

    assert approved.json()["preferences"]["approved_critical_tools"] == ["deploy_prod", WIPE]
    assert kept.json()["preferences"]["approved_critical_tools"] == ["deploy_prod", WIPE]
    assert withdrawn.json()["effective"]["approved_critical_tools"] == ["deploy_prod"]
    rows = sorted(await api.stores.audit.list(Scope.tenant("t1")), key=lambda r: r.seq)
    assert [(r.tool, r.code, r.subject, r.run_id) for r in rows] == [
        ("approved_critical_tools", "critical_tools_changed", "root", "")
    ] * 2
    assert [r.args_value() for r in rows] == [
        {"approved": ["deploy_prod", WIPE], "withdrawn": [], "now": ["deploy_prod", WIPE]},
        {"approved": [], "withdrawn": [WIPE], "now": ["deploy_prod"]},
    ]
    report = await api.stores.audit.verify("t1")
    assert all(chain.ok for chain in report.chains)
