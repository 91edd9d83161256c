"""Retrieval through the bus: search_docs in the gateway, checked citations at the end."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agents.llm.scripted import ScriptedLLM, text, tool_call, turn
from retrieval.embedders.hashing import HashingEmbedder
from retrieval.ingest import prepare
from retrieval.loaders import parse
from retrieval.settings import RetrievalSettings
from retrieval.stack import Retrieval, open_retrieval


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
    start_system, retrieval: Retrieval
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
    assert "[7]" not in (events[-1].answer or "") and "[1]" in (events[-1].answer or "")
