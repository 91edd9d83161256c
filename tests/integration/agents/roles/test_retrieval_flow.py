"""Retrieval through the bus: search_docs in the gateway, checked citations at the end."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from agents.llm.ports import ChatMessage, LLMEvent, LLMOptions, ToolDefinition
from agents.llm.scripted import ScriptedLLM, text, tool_call, turn
from bus.commands import Command
from bus.events import ClientEvent
from retrieval.embedders.hashing import HashingEmbedder
from retrieval.ingest import prepare
from retrieval.loaders import parse
from retrieval.settings import RetrievalSettings
from retrieval.stack import Retrieval, open_retrieval
from tests.integration.agents.events import final
from tests.integration.agents.system import StartSystem


@pytest.fixture
async def retrieval(tmp_path: Path) -> AsyncIterator[Retrieval]:
    settings = RetrievalSettings(data_dir=tmp_path, embedder="hashing")
    async with open_retrieval(settings, embedder=HashingEmbedder(), path=tmp_path / "q") as r:
        doc = parse(
            b"# Billing\n\nInvoices are sent on the first working day of each month.",
            source="billing.md",
        )
        await r.ingestor.ingest(prepare(doc, tenant="t1", chunking=r.chunking), tenant="t1")
        secret = parse(b"# Salaries\n\nThe CEO earns a lot.", source="hr.md")
        await r.ingestor.ingest(prepare(secret, tenant="t2", chunking=r.chunking), tenant="t2")
        yield r


async def test_search_docs_answer_keeps_real_citations_and_strips_invented_ones(
    start_system: StartSystem, retrieval: Retrieval
) -> None:
    llm = ScriptedLLM(
        [
            turn(tool_call("search_docs", {"query": "when are invoices sent"})),
            turn(text("Invoices go out on the first working day [1]. Also see [7].")),
        ]
    )
    system = await start_system(llm, retrieval=retrieval)
    events = await system.ask("When are invoices sent? Also, what does the CEO earn?")
    [result] = [e for e in events if e.type == "tool_result"]
    sources = [r["source"] for r in result.result["results"]]
    assert "billing.md" in sources and "hr.md" not in sources  # tenant t1 only
    [citations] = [e for e in events if e.type == "citations"]
    assert [c.source for c in citations.items] == ["billing.md"] and citations.stripped == 1
    assert "[7]" not in (final(events).answer or "") and "[1]" in (final(events).answer or "")


def _shown(events: Sequence[ClientEvent]) -> dict[int, str]:
    """Citation number -> chunk id, over every retrieval the run showed (must not collide)."""
    shown: dict[int, str] = {}
    for e in events:
        items = []
        if e.type == "tool_result" and e.tool == "search_docs":
            items = [(r["ref"], r["id"]) for r in e.result["results"]]
        elif e.type == "citations" and e.agent == "merge":
            items = [(c.ref, c.source) for c in e.items]
        for ref, chunk in items:
            assert shown.setdefault(ref, chunk) == chunk, f"[{ref}] names two chunks"
    return shown


async def test_two_searches_in_one_run_number_their_chunks_apart(
    start_system: StartSystem, retrieval: Retrieval
) -> None:
    # The same search twice: today both would be [1]; now the second result is [2].
    llm = ScriptedLLM(
        [
            turn(tool_call("search_docs", {"query": "invoices", "top_k": 1})),
            turn(tool_call("search_docs", {"query": "first working day", "top_k": 1})),
            turn(text("Invoices go out on the first working day [1][2]. Not [3].")),
        ]
    )
    system = await start_system(llm, retrieval=retrieval)
    events = await system.ask("When are invoices sent?")
    results = [e for e in events if e.type == "tool_result"]
    assert [[r["ref"] for r in e.result["results"]] for e in results] == [[1], [2]]
    assert len(_shown(events)) == 2
    [citations] = [e for e in events if e.type == "citations"]
    assert [c.ref for c in citations.items] == [1, 2] and citations.stripped == 1
    # What the model was shown under [2] is what the citation names.
    second = system.llm.requests[2][0][-1]
    assert second.role == "tool" and '"ref": 2' in second.content
    assert final(events).answer == "Invoices go out on the first working day [1][2]. Not."


async def test_search_results_after_merged_evidence_take_the_next_numbers(
    start_system: StartSystem, retrieval: Retrieval
) -> None:
    async def memory(command: Command, query: str) -> list[dict[str, Any]]:
        return [
            {"id": f"m{i}", "source": f"notes{i}.md", "title": "N", "text": f"note {i}"}
            for i in (1, 2)
        ]

    def script(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ) -> list[LLMEvent]:
        first = messages[0].content
        if first.startswith("You are the planner"):
            return turn(text("- search\n- answer"))
        if first.startswith("You are the critic"):
            return turn(text("OK"))
        if not any(m.role == "tool" for m in messages):
            return turn(tool_call("search_docs", {"query": "invoices", "top_k": 1}))
        return turn(text("Notes say so [1] and the docs agree [3]."))

    system = await start_system(
        ScriptedLLM(script), retrieval=retrieval, sources={"memory": memory}
    )
    events = await system.ask(
        "When are invoices sent?", mode="multi", verifier_check=False, sources=["memory"]
    )
    shown = _shown(events)
    assert sorted(shown) == [1, 2, 3]  # evidence [1], [2]; the search's chunk is [3]
    [final] = [e for e in events if e.type == "citations" and e.agent == "finalizer"]
    assert [(c.ref, c.source) for c in final.items] == [(1, "notes1.md"), (3, "billing.md")]


async def test_single_mode_with_documents_gives_the_model_numbered_passages_before_its_first_call(
    start_system: StartSystem, retrieval: Retrieval
) -> None:
    # No search_docs call: the passages are in front of the model from the start.
    llm = ScriptedLLM([turn(text("Invoices go out on the first working day [1]."))])
    system = await start_system(llm, retrieval=retrieval)
    events = await system.ask("When are invoices sent?", sources=["documents"])
    [citations] = [e for e in events if e.type == "citations" and e.agent == "merge"]
    assert [c.source for c in citations.items] == ["billing.md"]  # tenant t1's only
    first_request = llm.requests[0][0]
    context = [m.content for m in first_request if m.role == "system"][-1]
    assert (
        context.startswith("Evidence") and "[1] (documents: Billing) Invoices are sent" in context
    )
    assert "CEO" not in context
    assert final(events).answer == "Invoices go out on the first working day [1]."
    assert [e.type for e in events if e.type == "tool_call"] == []


async def test_single_mode_without_sources_goes_straight_to_the_researcher(
    start_system: StartSystem, retrieval: Retrieval
) -> None:
    llm = ScriptedLLM([turn(text("I do not know."))])
    system = await start_system(llm, retrieval=retrieval)
    events = await system.ask("When are invoices sent?")
    assert not [e for e in events if e.type == "citations" and e.agent == "merge"]
    assert not [m for m in llm.requests[0][0] if m.content.startswith("Evidence")]


async def test_an_answer_that_cites_nothing_gets_the_passage_it_restates(
    start_system: StartSystem, retrieval: Retrieval
) -> None:
    # What the small local models do: answer from the passage without writing its [n].
    llm = ScriptedLLM(
        [
            turn(tool_call("search_docs", {"query": "when are invoices sent"})),
            turn(text("Invoices are sent on the first working day of each month.")),
        ]
    )
    system = await start_system(llm, retrieval=retrieval)
    events = await system.ask("When are invoices sent?")

    marked = "Invoices are sent on the first working day of each month. [1]"
    shown = "".join(e.delta for e in events if e.type == "answer")
    assert final(events).answer == shown == marked  # the stream and the store say the same
    [citations] = [e for e in events if e.type == "citations"]
    assert [c.source for c in citations.items] == ["billing.md"] and citations.stripped == 0


async def test_an_answer_the_passages_do_not_hold_stays_unsourced(
    start_system: StartSystem, retrieval: Retrieval
) -> None:
    llm = ScriptedLLM(
        [
            turn(tool_call("search_docs", {"query": "capital of Spain"})),
            turn(text("Madrid is the capital of Spain.")),
        ]
    )
    system = await start_system(llm, retrieval=retrieval)
    events = await system.ask("What is the capital of Spain?")

    assert final(events).answer == "Madrid is the capital of Spain."
    assert [e for e in events if e.type == "citations"] == []
