"""Runs that follow a team: the example teams of docs/teams.md run to their answer through
the ``agent`` role, over a real Redis, with a model that answers as each of their agents."""

from __future__ import annotations

from agents.llm.scripted import ScriptedLLM
from bus.events import Answer, DraftSuperseded, ToolResult
from bus.store import Scope
from bus.team_run import PinnedTeam
from bus.transcript import fold
from tests.integration.agents.events import final, of_type
from tests.integration.agents.system import StartSystem
from tests.integration.agents.teams.examples import ENGLISH, FRENCH, pinned, team_turn, who

ALICE = Scope.user("t1", "alice")


async def test_a_researcher_then_a_translator_answers_in_the_questions_language(
    start_system: StartSystem,
) -> None:
    llm = ScriptedLLM(team_turn)
    system = await start_system(llm)
    events = await system.ask("Quelle est la capitale de la France ?", team=pinned("translate"))

    done = final(events)
    assert done.status == "done" and done.answer == FRENCH
    assert [who(r[0]) for r in llm.requests] == ["researcher_en", "translator"]
    # The translator is told the question and handed the researcher's answer.
    translator = llm.requests[1][0]
    assert translator[0].content.startswith("Translate the answer")
    assert any("Quelle est la capitale" in m.content for m in translator)
    assert f"The answer so far:\n{ENGLISH}" in translator[-1].content
    # Clients drop the English draft when the translation starts; the stored run keeps it.
    [superseded] = of_type(events, DraftSuperseded)
    assert superseded.agent == "translator"
    assert [a.agent for a in of_type(events, Answer)][-1] == "translator"
    assert fold(events).answer == FRENCH
    run = await system.stores.runs.get(ALICE, events[0].run_id)
    assert run is not None and run.status == "done" and run.answer == FRENCH
    usage = run.usage or {}
    assert usage["researcher_en_tokens"] > 0 and usage["translator_tokens"] > 0


async def test_triage_routes_on_its_structured_field_to_one_specialist(
    start_system: StartSystem,
) -> None:
    llm = ScriptedLLM(team_turn)
    system = await start_system(llm)
    events = await system.ask("My router keeps dropping the line.", team=pinned("triage"))

    done = final(events)
    assert done.status == "done"
    assert done.answer == "Restart the router, then check the cable."
    assert [who(r[0]) for r in llm.requests] == ["triage", "technical"]
    # Triage was asked under its schema; the specialist reads what it decided.
    assert llm.requests[0][2].response_schema is not None
    assert 'triage said: {"category": "technical"}' in llm.requests[1][0][-1].content


async def test_a_reviewer_loop_stops_at_its_bound_and_the_last_draft_goes_out(
    start_system: StartSystem,
) -> None:
    llm = ScriptedLLM(team_turn)  # the reviewer asks for a revision every time
    system = await start_system(llm)
    events = await system.ask("Write a line about Redis.", team=pinned("review"))

    done = final(events)
    assert done.status == "done" and done.answer == "Draft 3."
    # Two revisions (the edge's attempts), then the fallback edge to the finalizer.
    assert [who(r[0]) for r in llm.requests] == ["writer", "reviewer"] * 3
    assert (
        'reviewer said: {"verdict": "revise", "notes": "shorter"}' in llm.requests[2][0][-1].content
    )


async def test_a_declared_agent_calls_its_tools_through_the_gateway(
    start_system: StartSystem,
) -> None:
    team = PinnedTeam(
        name="calc",
        version=3,
        document={
            "agents": [
                {"name": "counter", "instructions": "Count with tools.", "tools": ["calculator"]}
            ],
            "edges": [
                {"from": "intake", "on": "admitted", "to": "counter"},
                {"from": "counter", "on": "answer", "to": "finalizer"},
            ],
        },
    )
    llm = ScriptedLLM(team_turn)
    system = await start_system(llm)
    events = await system.ask("What is 23 × 19?", team=team)

    [result] = of_type(events, ToolResult)
    assert (result.tool, result.status, result.result) == (
        "calculator",
        "ok",
        {"expression": "23 * 19", "result": 437},
    )
    assert final(events).status == "done" and final(events).answer == "437"
    # Only the agent's own tools were offered; the result came back to it as data.
    assert [t.name for t in llm.requests[0][1]] == ["calculator"]
    assert llm.requests[1][0][-1].role == "tool" and "437" in llm.requests[1][0][-1].content


async def test_past_its_agent_steps_the_answer_so_far_goes_to_the_finalizer(
    start_system: StartSystem,
) -> None:
    review = pinned("review")
    document = {**review.document, "limits": {"max_agent_steps": 3}}
    team = review.model_copy(update={"document": document})
    llm = ScriptedLLM(team_turn)
    system = await start_system(llm)
    events = await system.ask("Write a line about Redis.", team=team)

    done = final(events)
    assert (done.status, done.answer, done.stop_reason) == (
        "done",
        "Draft 2.",
        "agent_steps_exhausted",
    )
    assert [who(r[0]) for r in llm.requests] == ["writer", "reviewer", "writer"]
