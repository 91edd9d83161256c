"""``agentbus eval retrieval``: ingest the shipped docs into a throw-away embedded store and
score dense, keyword, hybrid and hybrid+rerank on the labelled questions.

Relevance is per document: a ranked list of chunks becomes a list of distinct documents.
The run uses its own temporary folder, so it never touches (or waits for) the
deployment's collection.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from agentbus_evals.retrieval.metrics import distinct, mrr_at, ndcg_at, recall_at
from retrieval.errors import RetrievalError
from retrieval.ingest import prepare
from retrieval.loaders import load_path
from retrieval.models import Access
from retrieval.ports import Embedder, Reranker
from retrieval.rerankers import make_reranker
from retrieval.search import SearchMethod
from retrieval.settings import RetrievalSettings
from retrieval.stack import open_retrieval

TENANT = "eval"
METHODS: tuple[SearchMethod, ...] = ("dense", "keyword", "hybrid", "hybrid+rerank")
#: Chunks fetched per question, so ten distinct documents are usually available.
FETCH = 20


def eval_dir() -> Path:
    """The shipped evaluation folder (docs/ and questions.json)."""
    return Path(str(resources.files("agentbus_evals").joinpath("retrieval")))


@dataclass(frozen=True, slots=True)
class MethodScore:
    """Mean metrics of one method over the question set."""

    method: str
    recall_at_5: float
    mrr_at_10: float
    ndcg_at_10: float
    mean_ms: float
    questions: int
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "method": self.method,
            "recall@5": round(self.recall_at_5, 4),
            "mrr@10": round(self.mrr_at_10, 4),
            "ndcg@10": round(self.ndcg_at_10, 4),
            "mean_ms": round(self.mean_ms, 2),
            "questions": self.questions,
            **({"note": self.note} if self.note else {}),
        }


async def evaluate(
    settings: RetrievalSettings,
    *,
    embedder: Embedder | None = None,
    reranker: Reranker | None = None,
    folder: Path | None = None,
) -> tuple[list[MethodScore], dict[str, Any]]:
    """Score every method; returns the scores and facts about the run (embedder, sizes)."""
    base = folder or eval_dir()
    questions = json.loads((base / "questions.json").read_text())["questions"]
    docs = sorted((base / "docs").glob("*.md"))
    if reranker is None:
        try:
            reranker = make_reranker("nanoranker")
        except RetrievalError:
            reranker = make_reranker("none")
    with tempfile.TemporaryDirectory(prefix="agentbus-eval-") as tmp:
        local = settings.model_copy(update={"qdrant_url": None, "qdrant_collection": "eval"})
        async with open_retrieval(local, embedder=embedder, reranker=reranker, path=Path(tmp)) as r:
            chunks = 0
            for path in docs:
                prepared = prepare(
                    load_path(path, source=path.stem), tenant=TENANT, chunking=r.chunking
                )
                chunks += (await r.ingestor.ingest(prepared, tenant=TENANT)).chunks
            scores = [await _score(r.searcher, m, questions, r.reranker.name) for m in METHODS]
            info = {
                "embedder": r.embedder.name,
                "reranker": r.reranker.name,
                "documents": len(docs),
                "chunks": chunks,
                "questions": len(questions),
            }
    return scores, info


async def _score(
    searcher: Any, method: SearchMethod, questions: list[dict[str, Any]], reranker: str
) -> MethodScore:
    access = Access(TENANT)
    totals = [0.0, 0.0, 0.0]
    elapsed = 0.0
    for q in questions:
        relevant = set(q["relevant"])
        started = time.perf_counter()
        if method == "hybrid+rerank" and reranker == "none":
            hits = await searcher.search(q["question"], access, top_k=FETCH, method="hybrid")
        else:
            hits = await searcher.search(q["question"], access, top_k=FETCH, method=method)
        elapsed += time.perf_counter() - started
        ranked = distinct([h.chunk.source for h in hits])
        totals[0] += recall_at(ranked, relevant, 5)
        totals[1] += mrr_at(ranked, relevant, 10)
        totals[2] += ndcg_at(ranked, relevant, 10)
    n = max(1, len(questions))
    note = (
        "no reranker installed: same as hybrid"
        if method == "hybrid+rerank" and reranker == "none"
        else ""
    )
    return MethodScore(
        method,
        totals[0] / n,
        totals[1] / n,
        totals[2] / n,
        elapsed / n * 1000,
        len(questions),
        note,
    )


def table(scores: list[MethodScore], info: dict[str, Any]) -> str:
    """The scores as a plain-text table."""
    lines = [
        f"embedder {info['embedder']}, reranker {info['reranker']}: "
        f"{info['documents']} documents, {info['chunks']} chunks, {info['questions']} questions",
        f"{'method':15} {'recall@5':>9} {'MRR@10':>9} {'nDCG@10':>9} {'ms/query':>9}",
    ]
    for s in scores:
        lines.append(
            f"{s.method:15} {s.recall_at_5:>9.3f} {s.mrr_at_10:>9.3f} {s.ndcg_at_10:>9.3f} "
            f"{s.mean_ms:>9.1f}" + (f"  ({s.note})" if s.note else "")
        )
    return "\n".join(lines)
