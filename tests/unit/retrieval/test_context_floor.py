"""The documents gather source gives as context only passages about the question, with the
local embedder: measured on the shipped answer set's documents and questions."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from importlib import resources
from typing import Literal

import pytest

from api.compose.settings import AppSettings
from bus.commands import Command, GatherTask, RunSettings, RunState, deadline_in
from bus.keys import Role
from retrieval.embedders.local_onnx import MiniLMEmbedder
from retrieval.gather_source import documents_source
from retrieval.models import Access
from retrieval.stack import Retrieval, open_retrieval
from tests.unit.retrieval.conftest import add


@pytest.fixture
async def minilm(make_settings: Callable[..., AppSettings]) -> AsyncIterator[Retrieval]:
    """Retrieval with the local embedder and the answer set's three documents."""
    settings = make_settings(embedder="local", reranker="none")
    async with open_retrieval(settings.retrieval, embedder=MiniLMEmbedder(workers=1)) as r:
        shipped = resources.files("agentbus_evals") / "data" / "answer_eval.json"
        for doc in json.loads(shipped.read_text())["documents"]:
            await add(r, doc["name"], doc["text"])
        yield r


def _command(mode: Literal["single", "multi"] = "single") -> Command:
    state = RunState(question="q", settings=RunSettings(mode=mode))
    return Command(
        run_id="r1",
        tenant_id="t1",
        subject="alice",
        role=Role.RETRIEVAL,
        deadline=deadline_in(60),
        payload=GatherTask(source="documents", query="q", join="j", expected=1, state=state),
    )


@pytest.mark.parametrize(
    ("question", "source"),
    [
        ("Who leads Project Halcyon?", "project-halcyon"),
        ("What is the daily meal allowance in Portugal?", "travel-policy"),
        # Phrased unlike the passage: found by its words, not its meaning.
        ("Within how many days must expense reports be filed?", "travel-policy"),
        ("What is the name of the guest Wi-Fi in Lisbon?", "lisbon-office"),
    ],
)
async def test_a_question_about_the_documents_gets_their_passage(
    minilm: Retrieval, question: str, source: str
) -> None:
    found = await documents_source(minilm.searcher)(_command(), question)
    assert found and found[0]["source"] == source


@pytest.mark.parametrize(
    "question",
    ["What is 15% of 840?", "What is (17 + 25) * 4?", "What time is it in Tokyo?"],
)
async def test_a_question_about_nothing_in_them_gets_no_context(
    minilm: Retrieval, question: str
) -> None:
    assert await documents_source(minilm.searcher)(_command(), question) == []
    # Multi mode's gather keeps the nearest passages: its judges refute drafts with them.
    assert await documents_source(minilm.searcher)(_command("multi"), question)
    # search_docs, asked, still answers with the best it has.
    assert await minilm.searcher.search(question, Access.of("t1", ()), top_k=3)


async def test_the_floored_search_embeds_the_question_once(
    minilm: Retrieval, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = minilm.searcher.embedder
    asked: list[str] = []
    embed_query = embedder.embed_query

    async def counted(text: str) -> list[float]:
        asked.append(text)
        return await embed_query(text)

    monkeypatch.setattr(embedder, "embed_query", counted)
    found = await documents_source(minilm.searcher)(_command(), "Who leads Project Halcyon?")
    assert found[0]["source"] == "project-halcyon"
    assert asked == ["Who leads Project Halcyon?"]  # the hybrid search and the floor's share it
