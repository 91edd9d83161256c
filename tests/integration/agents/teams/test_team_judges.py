"""The built-in judges inside a team: a declared writer's answer goes through the critic
and the verifier (docs/teams/checked.yaml), routed by the team's pinned edges, over a real
Redis with a scripted model."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from agents.llm.ports import ChatMessage, LLMEvent, LLMOptions, ToolDefinition
from agents.llm.scripted import ScriptedLLM, TurnFunction, text, turn
from bus import keys
from bus.commands import AgentTask, Command, RunSettings, RunState, deadline_in, new_run_id
from bus.events import ApprovalRequest, Critique, DraftSuperseded, Verdict
from bus.publish import publish
from bus.store import GateNotFound, Scope
from bus.team_run import PinnedTeam
from bus.transcript import fold
from tests.integration.agents.events import final, last_of, of_type
from tests.integration.agents.system import StartSystem, System
from tests.integration.agents.teams.examples import pinned, team_turn, who
from tests.integration.agents.test_gates import do_resume, until

ALICE = Scope.user("t1", "alice")


def role(messages: Sequence[ChatMessage]) -> str:
    """Who a request is for: a built-in judge, or an example agent."""
    first = messages[0].content
    for judge in ("critic", "verifier"):
        if first.startswith(f"You are the {judge}"):
            return judge
    return who(messages)


def judged(*, critic: str = "OK", verifier: str = "pass") -> TurnFunction:
    """The example agents, a critic that says ``critic`` of Draft 1 (OK after), and a
    verifier that says ``verifier`` of its first draft (pass after)."""
    seen: dict[str, int] = {}

    def answer(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ) -> list[LLMEvent]:
        who_ = role(messages)
        seen[who_] = seen.get(who_, 0) + 1
        if who_ == "critic":
            said = critic if seen[who_] == 1 else "OK"
            return turn(text(json.dumps({"verdict": said, "reason": "say which draft"})))
        if who_ == "verifier":
            said = verifier if seen[who_] == 1 else "pass"
            return turn(text(json.dumps({"verdict": said, "reasons": ["name the draft"]})))
        return list(team_turn(messages, tools, options))

    return answer


async def test_a_writers_answer_goes_through_the_critic_and_the_verifier(
    start_system: StartSystem,
) -> None:
    llm = ScriptedLLM(judged())
    system = await start_system(llm)
    events = await system.ask("Write a line about Redis.", team=pinned("checked"))

    done = final(events)
    assert (done.status, done.answer) == ("done", "Draft 1.")
    assert [role(r[0]) for r in llm.requests] == ["writer", "critic", "verifier"]
    # The critic reviewed the writer's draft.
    assert "Draft 1." in llm.requests[1][0][-1].content
    assert [c.verdict for c in of_type(events, Critique)] == ["OK"]
    assert [v.verdict for v in of_type(events, Verdict)] == ["pass"]
    run = await system.stores.runs.get(ALICE, events[0].run_id)
    assert run is not None and run.answer == "Draft 1."
    usage = run.usage or {}
    assert usage["writer_tokens"] > 0 and usage["critic_tokens"] > 0


async def test_the_critic_sends_the_draft_back_to_the_writer_once_with_its_reason(
    start_system: StartSystem,
) -> None:
    llm = ScriptedLLM(judged(critic="REVISE"))
    system = await start_system(llm)
    events = await system.ask("Write a line about Redis.", team=pinned("checked"))

    done = final(events)
    assert (done.status, done.answer) == ("done", "Draft 2.")
    assert [role(r[0]) for r in llm.requests] == [
        "writer",
        "critic",
        "writer",
        "critic",
        "verifier",
    ]
    handed = llm.requests[2][0][-1].content
    assert "The answer so far:\nDraft 1." in handed
    assert "The critic asked for another attempt: say which draft" in handed
    assert [c.verdict for c in of_type(events, Critique)] == ["REVISE", "OK"]
    # Clients dropped the first draft: what they were shown is what is stored.
    assert of_type(events, DraftSuperseded)
    assert fold(events).answer == "Draft 2."


async def test_the_verifier_sends_the_draft_back_and_the_bound_is_shared(
    start_system: StartSystem,
) -> None:
    llm = ScriptedLLM(judged(critic="REVISE", verifier="fail"))
    system = await start_system(llm)
    events = await system.ask("Write a line about Redis.", team=pinned("checked"))

    # The critic used the run's one send-back: the verifier's fail does not send it again.
    done = final(events)
    assert (done.status, done.answer) == ("done", "Draft 2.")
    assert [role(r[0]) for r in llm.requests][-1] == "verifier"
    assert [v.verdict for v in of_type(events, Verdict)] == ["fail"]


async def test_a_judge_sends_nothing_back_where_the_team_has_no_edge_for_it(
    start_system: StartSystem,
) -> None:
    team = pinned("checked")
    edges = [e for e in team.document["edges"] if (e["from"], e["on"]) != ("critic", "revise")]
    team = team.model_copy(update={"document": {**team.document, "edges": edges}})
    llm = ScriptedLLM(judged(critic="REVISE", verifier="needs_revision"))
    system = await start_system(llm)
    events = await system.ask("Write a line about Redis.", team=team)

    done = final(events)
    assert (done.status, done.answer) == ("done", "Draft 2.")
    # The critic's REVISE had no edge: on to the verifier, whose revise edge the team has.
    assert [role(r[0]) for r in llm.requests] == [
        "writer",
        "critic",
        "verifier",
        "writer",
        "critic",
        "verifier",
    ]
    assert "The verifier asked for another attempt: name the draft" in (
        llm.requests[3][0][-1].content
    )
    assert [v.verdict for v in of_type(events, Verdict)] == ["needs_revision", "pass"]


def _gated() -> PinnedTeam:
    """The checked team with the answer gate after the verifier's pass."""
    team = pinned("checked")
    edges = [e for e in team.document["edges"] if e["from"] != "verifier" or e["on"] != "pass"]
    edges += [
        {"from": "verifier", "on": "pass", "to": "answer_gate"},
        {"from": "answer_gate", "on": "approve", "to": "finalizer"},
        {"from": "answer_gate", "on": "reject", "to": "finalizer"},
    ]
    return team.model_copy(update={"document": {**team.document, "edges": edges}})


@pytest.mark.parametrize(("decision", "status"), [("approve", "done"), ("reject", "rejected")])
async def test_a_teams_answer_waits_at_the_answer_gate_for_a_person(
    start_system: StartSystem, decision: str, status: str
) -> None:
    llm = ScriptedLLM(judged())
    system = await start_system(llm)
    command = await start_run_on(system, _gated())
    last, events = await until(system, command.run_id, "approval_request")
    request = last_of(events, ApprovalRequest)
    assert (request.reason, request.answer) == ("approve_answer", "Draft 1.")
    run = await system.stores.runs.get(ALICE, command.run_id)
    assert run is not None and run.status == "suspended"
    with pytest.raises(GateNotFound):  # another tenant's user cannot decide
        await do_resume(system, command.run_id, decision, Scope.user("t2", "alice"))

    await do_resume(system, command.run_id, decision)
    _, rest = await until(system, command.run_id, "done", after=last)
    assert final(rest).status == status
    assert final(rest).answer == ("Draft 1." if decision == "approve" else None)
    assert [role(r[0]) for r in llm.requests] == ["writer", "critic", "verifier"]


async def start_run_on(system: System, team: PinnedTeam) -> Command:
    """Publish a question that follows ``team`` (the gate tests read its events as it goes)."""
    command = Command(
        run_id=new_run_id(),
        tenant_id="t1",
        subject="alice",
        role=keys.Role.INTAKE,
        deadline=deadline_in(30),
        payload=AgentTask(
            state=RunState(
                question="Write a line about Redis.",
                settings=RunSettings(mode="custom", team=team),
            )
        ),
    )
    await publish(system.redis, command, system.settings)
    return command
