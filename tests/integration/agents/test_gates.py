"""Durable gates at the agent level: answer approval and egress approval, then resume."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from agents import gates
from agents.llm.ports import ChatMessage, LLMOptions, ToolDefinition
from agents.llm.scripted import ScriptedLLM, benchmark_turn, text, tool_call, turn
from api.compose.edge import allow_always_hook
from bus import keys
from bus.commands import AgentTask, Command, RunSettings, RunState, deadline_in, new_run_id
from bus.events import ApprovalRequest, ClientEvent
from bus.publish import publish, read_events
from bus.store import CheckpointStore, GateConflict, GateForbidden, GateNotFound, Scope
from bus.transcript import fold
from tests.integration.agents.events import final, last_of
from tests.integration.agents.roles.test_multi_mode import role_of
from tests.integration.agents.system import StartSystem, System

ALICE = Scope.user("t1", "alice")


def critic_ok() -> ScriptedLLM:
    def script(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ):
        role = role_of(messages, options)
        if role == "planner":
            return turn(text("- compute"))
        if role == "critic":
            return turn(text("OK supported."))
        return benchmark_turn(messages, tools, options)

    return ScriptedLLM(script)


async def start_run(system: System, question: str, **settings: Any) -> Command:
    command = Command(
        run_id=new_run_id(),
        tenant_id="t1",
        subject="alice",
        role=keys.Role.INTAKE,
        deadline=deadline_in(30),
        payload=AgentTask(
            state=RunState(
                question=question,
                conversation_id="c-gates",
                settings=RunSettings(mode="multi", verifier_check=False, **settings),
            )
        ),
    )
    await publish(system.redis, command, system.settings)
    return command


async def until(
    system: System, run_id: str, kind: str, after: str = "0-0"
) -> tuple[str, list[ClientEvent]]:
    seen: list[ClientEvent] = []
    async with asyncio.timeout(20):
        async for event_id, event in read_events(
            system.redis, run_id, 0, after=after, block_ms=100
        ):
            seen.append(event)
            if event.type == kind:
                return event_id, seen
    raise AssertionError(f"no {kind}")


def checkpoints(system: System) -> CheckpointStore:
    assert system.stores.checkpoints is not None
    return system.stores.checkpoints


async def do_resume(system: System, run_id: str, decision: str, scope: Scope = ALICE) -> Command:
    return await gates.resume(
        checkpoints(system),
        system.stores.runs,
        system.redis,
        system.settings,
        scope=scope,
        run_id=run_id,
        decision=decision,
        allow_always=allow_always_hook(system.stores),
    )


async def test_answer_gate_approve_then_done(start_system: StartSystem) -> None:
    system = await start_system(critic_ok())
    command = await start_run(system, "What is 23 × 19?", human_gate=True)
    last, events = await until(system, command.run_id, "approval_request")
    request = last_of(events, ApprovalRequest)
    assert request.reason == "approve_answer" and "437" in (request.answer or "")
    assert request.critique == "supported."
    assert "done" not in [e.type for e in events]  # the live stream ends without done
    run = await system.stores.runs.get(ALICE, command.run_id)
    assert run is not None and run.status == "suspended"

    with pytest.raises(GateNotFound):
        await do_resume(system, command.run_id, "approve", Scope.user("t2", "alice"))
    with pytest.raises(GateNotFound):
        await do_resume(system, command.run_id, "approve", Scope.user("t1", "bob"))
    with pytest.raises(GateForbidden):
        await do_resume(system, command.run_id, "approve", Scope.admin("t1", "root"))
    with pytest.raises(gates.BadDecision):
        await do_resume(system, command.run_id, "egress_deny")
    await do_resume(system, command.run_id, "approve")
    with pytest.raises(GateConflict):
        await do_resume(system, command.run_id, "approve")
    _, rest = await until(system, command.run_id, "done", after=last)
    assert final(rest).status == "done" and "437" in (final(rest).answer or "")
    history = await system.stores.conversations.history(ALICE, "c-gates")
    assert [m.role for m in history] == ["user", "assistant"]


async def test_answer_gate_reject_ends_rejected_without_committing(
    start_system: StartSystem,
) -> None:
    system = await start_system(critic_ok())
    command = await start_run(system, "What is 23 × 19?", human_gate=True)
    last, _ = await until(system, command.run_id, "approval_request")
    await do_resume(system, command.run_id, "reject")
    _, rest = await until(system, command.run_id, "done", after=last)
    assert final(rest).status == "rejected" and final(rest).answer is None
    assert await system.stores.conversations.history(ALICE, "c-gates") == []
    run = await system.stores.runs.get(ALICE, command.run_id)
    assert run is not None and run.status == "rejected"


def egress_script() -> ScriptedLLM:
    """Calculator + web search in one turn; the search is blocked (egress is off)."""

    def script(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ):
        role = role_of(messages, options)
        if role == "planner":
            return turn(text("- search"))
        if role == "critic":
            return turn(text("OK"))
        if messages[-1].role == "tool":
            return turn(text("Done searching."))
        return turn(
            tool_call("calculator", {"expression": "2+2"}),
            tool_call("web_search", {"query": "agentbus"}),
        )

    return ScriptedLLM(script)


@pytest.mark.parametrize("decision", ["egress_deny", "egress_allow_once", "egress_allow_always"])
async def test_egress_gate_retries_only_the_blocked_call(
    start_system: StartSystem, decision: str
) -> None:
    system = await start_system(egress_script())
    command = await start_run(system, "search the web")
    last, events = await until(system, command.run_id, "approval_request")
    request = last_of(events, ApprovalRequest)
    assert (request.reason, request.tool) == ("egress_approval", "web_search")
    assert request.blocked_host == "html.duckduckgo.com" and request.args == {"query": "agentbus"}
    info = await gates.more_info(checkpoints(system), ALICE, command.run_id)
    assert info["blocked_host"] == "html.duckduckgo.com"

    await do_resume(system, command.run_id, decision)
    _, rest = await until(system, command.run_id, "done", after=last)
    everything = events + rest
    results = [(e.tool, e.code) for e in everything if e.type == "tool_result"]
    assert results.count(("calculator", "ok")) == 1  # never ran again
    if decision == "egress_deny":
        assert ("web_search", "egress_blocked") in results and len(results) == 2
    else:
        # Allowed: the search ran again (no internet here, but past the egress check).
        assert [code for tool, code in results if tool == "web_search"][-1] != "egress_blocked"
    assert final(rest).status == "done"
    assert fold(everything).answer.endswith("Done searching.")

    prefs = await system.stores.tenant_settings.get("t1")
    assert system.stores.audit is not None
    audit = await system.stores.audit.list(Scope.tenant("t1"))
    if decision == "egress_allow_always":
        assert prefs is not None and prefs.settings["egress_hosts"] == ["html.duckduckgo.com"]
        assert prefs.settings["egress_enabled"] is True
        assert any(row.code == "allow_always" for row in audit)
    else:  # allow once is not persisted
        assert prefs is None
