"""A team gathers the run's sources before its first agent: the merged passages are in
front of the declared agent, numbered, and its answer's citations of them are checked
and kept (scripted model, real Redis)."""

from __future__ import annotations

from typing import Any

from agents.llm.scripted import ScriptedLLM, text, turn
from bus.commands import Command
from bus.events import Citations
from bus.team_run import PinnedTeam
from tests.integration.agents.events import final, of_type
from tests.integration.agents.system import StartSystem

SOURCED = PinnedTeam(
    name="sourced",
    version=1,
    document={
        "agents": [{"name": "writer", "instructions": "Answer from the passages."}],
        "edges": [
            {"from": "intake", "on": "admitted", "to": "gather", "when": "has_sources"},
            {"from": "intake", "on": "admitted", "to": "writer"},
            {"from": "gather", "on": "gathered", "to": "merge"},
            {"from": "merge", "on": "merged", "to": "writer"},
            {"from": "writer", "on": "answer", "to": "finalizer"},
        ],
    },
)


async def notes(command: Command, query: str) -> list[dict[str, Any]]:
    return [
        {"id": f"m{i}", "source": f"notes{i}.md", "title": "N", "text": f"invoices note {i}"}
        for i in (1, 2)
    ]


async def test_a_declared_agent_reads_the_gathered_passages_and_cites_them(
    start_system: StartSystem,
) -> None:
    llm = ScriptedLLM([turn(text("Invoices go out monthly [2], not weekly [7]."))])
    system = await start_system(llm, sources={"memory": notes})
    events = await system.ask("When are invoices sent?", team=SOURCED, sources=["memory"])

    done = final(events)
    assert done.status == "done"
    assert done.answer == "Invoices go out monthly [2], not weekly."  # [7] was never shown
    [request] = llm.requests
    assert request[0][0].content == "Answer from the passages."
    context = [m.content for m in request[0] if m.role == "system"][-1]
    assert context.startswith("Evidence") and "[2] (memory: N) invoices note 2" in context
    [kept] = [e for e in of_type(events, Citations) if e.agent == "finalizer"]
    assert [(c.ref, c.source) for c in kept.items] == [(2, "notes2.md")]


async def test_a_run_without_sources_goes_straight_to_the_first_agent(
    start_system: StartSystem,
) -> None:
    llm = ScriptedLLM([turn(text("Monthly."))])
    system = await start_system(llm, sources={"memory": notes})
    events = await system.ask("When are invoices sent?", team=SOURCED, sources=[])

    assert final(events).answer == "Monthly."
    assert not [e for e in of_type(events, Citations) if e.agent == "merge"]
    assert not any(m.role == "system" and "Evidence" in m.content for m in llm.requests[0][0])
