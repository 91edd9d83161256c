"""The context eval: which questions single mode hands the tenant's passages to.

``context_eval.json`` holds questions about the shipped documents (the answer set's three
and the retrieval eval's sixteen, ingested as one tenant's) and questions about none of
them (code, arithmetic, greetings, general knowledge, some sharing a word with a
document). `scores` runs each question through the real retrieval and records the best
its passages reach by meaning and by words (`retrieval.relevance`); `calibrate` sets a
floor from the ``dev`` half, and `figures` counts, on any half, the unrelated questions
that got context (the target is none) and the related ones that lost it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Literal

from pydantic import BaseModel, ConfigDict

from agentbus_evals.retrieval.runner import eval_dir
from retrieval.ingest import prepare
from retrieval.loaders import parse
from retrieval.models import Access
from retrieval.relevance import RelevanceFloor, passage_text, term_coverage
from retrieval.stack import Retrieval

TENANT = "t1"
Split = Literal["dev", "test"]


class ContextQuestion(BaseModel):
    """One question; ``about`` names the document it is about, None for none."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str
    split: Split
    kind: str
    question: str
    about: str | None


def load_questions(split: Split | None = None) -> list[ContextQuestion]:
    """The shipped questions, or one half of them."""
    shipped = resources.files("agentbus_evals") / "data" / "context_eval.json"
    rows = json.loads(shipped.read_text())["questions"]
    questions = [ContextQuestion.model_validate(r) for r in rows]
    return [q for q in questions if split is None or q.split == split]


def documents() -> list[tuple[str, str]]:
    """The documents the questions are (or are not) about: ``(source, Markdown)``."""
    answer_set = resources.files("agentbus_evals") / "data" / "answer_eval.json"
    docs = [(d["name"], d["text"]) for d in json.loads(answer_set.read_text())["documents"]]
    for path in sorted((eval_dir() / "docs").glob("*.md")):
        docs.append((path.stem, path.read_text()))
    return docs


async def ingest_documents(retrieval: Retrieval) -> None:
    """Ingest `documents` as the tenant's."""
    for source, text in documents():
        doc = parse(text.encode(), source=source, kind="markdown")
        prepared = prepare(doc, tenant=TENANT, acl=[], chunking=retrieval.chunking)
        await retrieval.ingestor.ingest(prepared, tenant=TENANT)


@dataclass(frozen=True, slots=True)
class Scored:
    """The best one question's passages reach (over single mode's hybrid top k)."""

    question: ContextQuestion
    similarity: float
    coverage: float

    def gets_context(self, floor: RelevanceFloor) -> bool:
        """True when some passage passes ``floor`` (the rule is "either side", per passage,
        so the best of each side decides)."""
        by_meaning = floor.similarity is not None and self.similarity >= floor.similarity
        return by_meaning or self.coverage >= floor.coverage


async def scores(retrieval: Retrieval, questions: Sequence[ContextQuestion]) -> list[Scored]:
    """Each question's best similarity and term coverage among the passages single mode's
    search returns for it."""
    searcher, access = retrieval.searcher, Access.of(TENANT, ())
    out: list[Scored] = []
    for q in questions:
        hits = await searcher.search(q.question, access)
        dense = await searcher.search(
            q.question, access, top_k=searcher.config.max_top_k, method="dense"
        )
        near = {h.chunk.id: h.score for h in dense}
        similarity = max((near.get(h.chunk.id, 0.0) for h in hits), default=0.0)
        coverage = max((term_coverage(q.question, passage_text(h)) for h in hits), default=0.0)
        out.append(Scored(q, similarity, coverage))
    return out


def calibrate(dev: Sequence[Scored]) -> RelevanceFloor:
    """A floor from the ``dev`` half: on each side, midway between the most an unrelated
    question reached and the least a related one reached above that."""

    def midway(values: dict[bool, list[float]]) -> float:
        worst = max(values[False], default=0.0)
        above = [v for v in values[True] if v > worst]
        return round((worst + min(above, default=worst)) / 2, 2) if above else worst + 0.01

    sims: dict[bool, list[float]] = {True: [], False: []}
    covs: dict[bool, list[float]] = {True: [], False: []}
    for s in dev:
        sims[s.question.about is not None].append(s.similarity)
        covs[s.question.about is not None].append(s.coverage)
    return RelevanceFloor(similarity=midway(sims), coverage=midway(covs))


@dataclass(frozen=True, slots=True)
class Figures:
    """What a floor does on a set of questions."""

    unrelated: int
    unrelated_with_context: list[str]
    related: int
    related_without: list[str]


def figures(scored: Sequence[Scored], floor: RelevanceFloor) -> Figures:
    """Unrelated questions given context, and related ones not, under ``floor``."""
    unrelated = [s for s in scored if s.question.about is None]
    related = [s for s in scored if s.question.about is not None]
    return Figures(
        unrelated=len(unrelated),
        unrelated_with_context=[s.question.id for s in unrelated if s.gets_context(floor)],
        related=len(related),
        related_without=[s.question.id for s in related if not s.gets_context(floor)],
    )
