"""Single mode's context is for questions about the documents: the shipped context eval's
``test`` half, through the real retrieval with the local embedder, and the floor that is
the ``dev`` half's calibration."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from agentbus_evals.context_set import (
    TENANT,
    ContextQuestion,
    calibrate,
    figures,
    ingest_documents,
    load_questions,
    scores,
)
from bus.commands import Command, GatherTask, RunSettings, RunState, deadline_in
from bus.keys import Role
from retrieval.embedders.local_onnx import MiniLMEmbedder
from retrieval.gather_source import documents_source
from retrieval.relevance import FLOORS, WORDS_ONLY, term_coverage
from retrieval.settings import RetrievalSettings
from retrieval.stack import Retrieval, open_retrieval

# One store for the module (the nineteen documents are embedded once), on the module's loop.
on_module_loop = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def tenant(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Retrieval]:
    """The local embedder over the nineteen shipped documents, as one tenant's."""
    folder: Path = tmp_path_factory.mktemp("context")
    settings = RetrievalSettings(data_dir=folder, embedder="local", reranker="none")
    embedder = MiniLMEmbedder(workers=1)
    async with open_retrieval(settings, embedder=embedder, path=folder / "q") as r:
        await ingest_documents(r)
        yield r


def single_mode(question: str) -> Command:
    state = RunState(question=question, settings=RunSettings(mode="single"))
    task = GatherTask(source="documents", query=question, join="j", expected=1, state=state)
    return Command(
        run_id="r1",
        tenant_id=TENANT,
        subject="alice",
        role=Role.RETRIEVAL,
        deadline=deadline_in(60),
        payload=task,
    )


async def given(tenant: Retrieval, question: ContextQuestion) -> list[str]:
    """The sources of the passages single mode puts in front of the question."""
    asked = question.question
    found = await documents_source(tenant.searcher)(single_mode(asked), asked)
    return [p["source"] for p in found]


@on_module_loop
@pytest.mark.timeout(300)
async def test_no_question_of_the_test_half_about_nothing_in_them_gets_a_passage(
    tenant: Retrieval,
) -> None:
    unrelated = [q for q in load_questions("test") if q.about is None]
    assert len(unrelated) >= 20
    given_context = {q.id: await given(tenant, q) for q in unrelated}
    assert {q: s for q, s in given_context.items() if s} == {}


@on_module_loop
@pytest.mark.timeout(300)
async def test_the_test_halfs_document_questions_get_their_document(tenant: Retrieval) -> None:
    related = [q for q in load_questions("test") if q.about is not None]
    lost = [q.id for q in related if q.about not in await given(tenant, q)]
    # r08 "Is business class allowed on a 3-hour flight?": 0.28 from its passage by
    # meaning, 2 of 5 words ("class", "flight"): the one the floor costs (docs/architecture.md).
    assert lost == ["r08"]


@on_module_loop
@pytest.mark.timeout(300)
async def test_the_shipped_floor_is_the_dev_halfs_calibration(tenant: Retrieval) -> None:
    dev = await scores(tenant, load_questions("dev"))
    floor = calibrate(dev)
    assert FLOORS[tenant.searcher.embedder.name] == floor
    assert WORDS_ONLY.coverage == floor.coverage
    result = figures(dev, floor)
    assert (result.unrelated_with_context, result.related_without) == ([], [])


def test_one_shared_word_is_not_a_passage_about_the_question() -> None:
    policy = "Economy class is required for flights shorter than 6 hours."
    assert term_coverage("Who is the chancellor of Germany?", "Per diem in Germany: 62 EUR.") == 0
    assert term_coverage("Is business class allowed on a 3-hour flight?", policy) == 0.4
    filed = "Expense reports must be filed within 14 days of returning from a trip."
    assert term_coverage("Within how many days must expense reports be filed?", filed) > 0.8
