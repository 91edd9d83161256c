"""A team's passages: gathered from the run's sources before its first agent, or found
by an agent's search, they are in front of the declared agents after, numbered, and
their answers' citations of them are checked and kept; an agent whose sources leave the
documents out does not search them (scripted model, real Redis)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agents.llm.ports import ChatMessage, LLMEvent, LLMOptions, ToolDefinition
from agents.llm.scripted import ScriptedLLM, text, tool_call, turn
from bus.commands import Command
from bus.events import Citations, ToolResult
from bus.team_run import PinnedTeam
from retrieval.stack import Retrieval
from tests.integration.agents.events import final, of_type
from tests.integration.agents.roles.test_retrieval_flow import retrieval as retrieval
from tests.integration.agents.system import StartSystem
from tests.integration.api.catalogue import catalogue_a_document

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


async def test_a_later_agent_may_cite_what_an_earlier_agents_search_found(
    start_system: StartSystem, retrieval: Retrieval
) -> None:
    team = PinnedTeam(
        name="cited",
        version=1,
        document={
            "agents": [
                {
                    "name": "finder",
                    "instructions": "Search, then answer.",
                    "tools": ["search_docs"],
                },
                {"name": "translator", "instructions": "Translate the answer into French."},
            ],
            "edges": [
                {"from": "intake", "on": "admitted", "to": "finder"},
                {"from": "finder", "on": "answer", "to": "translator"},
                {"from": "translator", "on": "answer", "to": "finalizer"},
            ],
        },
    )

    def script(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ) -> list[LLMEvent]:
        if messages[0].content.startswith("Translate"):
            return turn(text("Les factures partent le premier jour ouvré [1]."))
        if messages[-1].role != "tool":
            return turn(tool_call("search_docs", {"query": "invoices", "top_k": 1}))
        return turn(text("Invoices go out on the first working day [1]."))

    llm = ScriptedLLM(script)
    system = await start_system(llm, retrieval=retrieval)
    await catalogue_a_document(system)  # the tenant has documents: search_docs is offered
    events = await system.ask("When are invoices sent?", team=team)

    done = final(events)
    assert done.answer == "Les factures partent le premier jour ouvré [1]."
    # The translator read the passage its answer cites.
    context = [m.content for m in llm.requests[2][0] if m.role == "system"][-1]
    assert "[1] (documents: Billing) Invoices are sent" in context
    [kept] = [e for e in of_type(events, Citations) if e.agent == "finalizer"]
    assert [(c.ref, c.source) for c in kept.items] == [(1, "billing.md")]


async def test_an_agent_whose_sources_leave_out_the_documents_does_not_search_them(
    start_system: StartSystem, retrieval: Retrieval
) -> None:
    team = PinnedTeam(
        name="noted",
        version=1,
        document={
            "agents": [
                {
                    "name": "noter",
                    "instructions": "Answer from the user's notes.",
                    "tools": ["search_docs", "calculator"],
                    "sources": ["memory"],
                }
            ],
            "edges": [
                {"from": "intake", "on": "admitted", "to": "noter"},
                {"from": "noter", "on": "answer", "to": "finalizer"},
            ],
        },
    )

    def script(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ) -> list[LLMEvent]:
        if messages[-1].role != "tool":  # it asks for the search all the same, by name
            return turn(tool_call("search_docs", {"query": "invoices", "top_k": 1}))
        return turn(text("I have no notes about invoices."))

    llm = ScriptedLLM(script)
    system = await start_system(llm, retrieval=retrieval)
    await catalogue_a_document(system)  # the tenant has documents: search_docs exists
    events = await system.ask("When are invoices sent?", team=team)

    assert [t.name for t in llm.requests[0][1]] == ["calculator"]
    [result] = of_type(events, ToolResult)
    assert (result.tool, result.code) == ("search_docs", "permission_denied")
    assert final(events).answer == "I have no notes about invoices."
