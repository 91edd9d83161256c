"""Facts through the extractor port at ingest: the model extractor, played by the scripted
model answering JSON, on the retrieval role's ingest lane (real Redis, Qdrant Edge, SQL).

Two documents are published as a job: one of three sections, whose chunks the model is
asked about in one call, each fact naming its passage; and one whose reply is prose, not
the schema's JSON: its chunk gets no facts, the failed call is counted, and the chunk
stays searchable.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
import structlog
import typer
from redis.asyncio import Redis
from typer.testing import CliRunner

from agents.llm.ports import ChatMessage, LLMOptions, ToolDefinition
from agents.llm.scripted import ScriptedLLM, Turn, text, turn
from agents.understanding.fact_extractor import ModelExtractor
from api.cli import ingest as ingest_cmd
from api.cli import ingest_run
from api.compose.settings import AppSettings
from bus import keys
from bus.runtime.worker import Worker
from bus.store import open_store
from retrieval.embedders.hashing import HashingEmbedder
from retrieval.graph.index import GraphIndex
from retrieval.graph.search import GraphSearch
from retrieval.ingest import prepare
from retrieval.loaders import load_path
from retrieval.models import Access
from retrieval.stack import chunking_config, open_retrieval
from retrieval.worker import make_retrieval_handler
from tests.support import running

DOC = """# Falcon

## Lead

Project Falcon is led by Maria Chen.

## Office

Maria Chen works from the Lisbon office.

## Plan

The plan is reviewed each quarter.
"""
BROKEN = "# Broken\n\nThe reply about this document is not JSON.\n"
_PASSAGE = re.compile(r"Passage (\d+):\n(.*?)(?=\n\nPassage \d+:|\Z)", re.S)
_FACTS = {
    "led by": ("Project Falcon", "is led by", "Maria Chen"),
    "works from": ("Maria Chen", "works from", "Lisbon office"),
}


def reader(
    messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
) -> Turn:
    """Answers the facts of each numbered passage it is shown, as a model under the schema
    would; a group holding the broken section gets prose instead."""
    del tools
    assert options.response_schema is not None
    asked = messages[-1].content
    if "not JSON" in asked:  # the broken document
        return turn(text("Sorry, I cannot help with that."))
    facts: list[dict[str, object]] = []
    for number, passage in _PASSAGE.findall(asked) or [("1", asked)]:
        for marker, (s, r, o) in _FACTS.items():
            if marker in passage:
                facts.append({"passage": int(number), "subject": s, "relation": r, "object": o})
    return turn(text(json.dumps({"facts": facts})))


async def test_a_model_extractor_stores_each_chunk_its_own_facts_from_one_call_per_group(
    real_redis: Redis, make_settings: Callable[..., AppSettings], tmp_path: Path
) -> None:
    from tests.conftest import TEST_REDIS_URL

    (tmp_path / "falcon.md").write_text(DOC)
    (tmp_path / "broken.md").write_text(BROKEN)
    settings = make_settings(redis_url=TEST_REDIS_URL, embedder="hashing", chunk_max_chars=200)
    chunking = chunking_config(settings.retrieval)
    docs = [
        prepare(load_path(tmp_path / name), tenant="t1", chunking=chunking)
        for name in ("falcon.md", "broken.md")
    ]
    assert [len(d.chunks) for d in docs] == [3, 1]
    model = ScriptedLLM(reader)
    extractor = ModelExtractor(model)
    async with (
        open_store(settings.bus, migrate=True) as stores,
        open_retrieval(settings.retrieval, embedder=HashingEmbedder(384)) as r,
    ):
        assert stores.facts is not None
        ingestor = r.ingestor.with_graph(GraphIndex(stores.facts, extractor))
        worker = Worker(
            keys.Role.RETRIEVAL,
            make_retrieval_handler(ingestor),
            real_redis,
            settings.bus,
            lane=keys.INGEST_LANE,
        )
        async with running([worker], real_redis):
            counts, status = await asyncio.wait_for(
                ingest_run._via_bus(settings, docs, "t1", False, 60),  # pyright: ignore[reportPrivateUsage]
                30,
            )
        assert (status, counts["embedded"], counts["facts"]) == ("done", 4, 2)
        assert (len(model.requests), extractor.failed_calls) == (2, 1)
        [falcon] = [m for m, _, _ in model.requests if "Lisbon" in m[-1].content]
        assert "Passage 3:" in falcon[-1].content  # the three chunks, asked together
        search = GraphSearch(stores.facts)
        found = await search.search("Where does the lead of Project Falcon work?", Access("t1"))
        facts = {p.heading: {(f.subject, f.relation, f.object) for f in p.facts} for p in found}
        assert facts == {
            "Lead": {("Project Falcon", "is led by", "Maria Chen")},
            "Office": {("Maria Chen", "works from", "Lisbon office")},
        }
        hits = await r.searcher.search("the reply about this document", Access("t1"), top_k=3)
        assert any(h.chunk.source.endswith("broken.md") for h in hits)


app = typer.Typer()
app.command()(ingest_cmd.ingest)


@pytest.fixture(autouse=True)
def _reset_logging() -> Iterator[None]:
    # The CLI points structlog at the stderr CliRunner swaps in and then closes.
    yield
    structlog.reset_defaults()


def _direct(folder: Path) -> dict[str, object]:
    result = CliRunner().invoke(app, [str(folder), "--direct", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_direct_ingest_says_which_extractor_ran_and_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "falcon.md").write_text(DOC)
    monkeypatch.setenv("AGENTBUS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("AGENTBUS_EMBEDDER", "hashing")
    monkeypatch.setenv("AGENTBUS_LLM", "scripted")
    auto = _direct(tmp_path / "docs")
    assert auto["extractor"] == "rules"
    assert "not measured better" in str(auto["extractor_reason"])
    assert int(str(auto["facts"])) >= 2  # the rules read "is led by", "works from"

    monkeypatch.setenv("AGENTBUS_GRAPH_EXTRACTOR", "model")
    (tmp_path / "docs" / "falcon.md").write_text(DOC + "\nEdited.\n")
    chosen = _direct(tmp_path / "docs")
    assert (chosen["extractor"], chosen["extractor_reason"]) == (
        "model (scripted)",
        "AGENTBUS_GRAPH_EXTRACTOR=model",
    )


def test_a_model_that_cannot_load_falls_back_to_the_rules_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agents.errors import ModelNotInstalled
    from agents.llm.local import LocalLLM

    async def missing(self: LocalLLM) -> None:
        raise ModelNotInstalled("weight package x==1 is missing", hint="make install-1.5b")

    monkeypatch.setattr(LocalLLM, "load", missing)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "falcon.md").write_text(DOC)
    monkeypatch.setenv("AGENTBUS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("AGENTBUS_EMBEDDER", "hashing")
    monkeypatch.setenv("AGENTBUS_LLM", "local")
    monkeypatch.setenv("AGENTBUS_GRAPH_EXTRACTOR", "model")
    report = _direct(tmp_path / "docs")
    assert report["extractor"] == "rules"
    reason = str(report["extractor_reason"])
    assert "cannot load" in reason and "make install-1.5b" in reason
