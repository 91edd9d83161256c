"""``agentbus eval graph``: is each needed fact in what the researcher is given, with the
knowledge graph and without it?

The shipped set (``agentbus_evals/retrieval/graph``) holds two-hop questions whose two facts sit in
two documents, the second never naming what the question names. The documents are
ingested into a throw-away embedded store and SQLite database with the extractor chosen
(rules by default), timed per chunk; then, per question, what each condition gives the
researcher is checked for the documents holding the needed facts:

* ``documents`` - the documents source's top-k (multi mode's documents branch);
* ``documents@8`` - the same search, as many passages as a merge keeps;
* ``graph`` - the graph source's top-k;
* ``documents+graph`` - both branches fused as multi mode's merge fuses them (RRF, a
  text budget per source, 8 passages): what the researcher reads.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from agents.roles.gather import fuse
from api.compose.settings import AppSettings
from bus.store import Triple, open_store
from retrieval.graph.index import GraphIndex
from retrieval.graph.rules import RuleExtractor
from retrieval.graph.search import GraphConfig, GraphSearch
from retrieval.ingest import prepare
from retrieval.loaders import load_path
from retrieval.models import Access
from retrieval.ports import Embedder, FactExtractor
from retrieval.rerankers import make_reranker
from retrieval.stack import open_retrieval

TENANT = "eval"
#: What multi mode's merge keeps (`agents.roles.gather.handle_merge`'s defaults).
MERGE_TOP_K = 8
MERGE_SOURCE_CHARS = 2000
CONDITIONS = ("documents", "documents@8", "graph", "documents+graph")


def graph_eval_dir() -> Path:
    """The shipped two-hop set (docs/ and questions.json)."""
    return Path(str(resources.files("agentbus_evals").joinpath("retrieval", "graph")))


@dataclass(frozen=True, slots=True)
class ConditionScore:
    """How often a condition put the needed documents in front of the researcher."""

    condition: str
    fact_recall: float
    both_found: float
    questions: int

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "condition": self.condition,
            "fact_recall": round(self.fact_recall, 4),
            "both_found": round(self.both_found, 4),
            "questions": self.questions,
        }


@dataclass(frozen=True, slots=True)
class GraphEval:
    """The scores, the extraction's cost and each question's findings."""

    scores: list[ConditionScore]
    info: dict[str, Any]
    found: dict[str, dict[str, list[str]]]


async def evaluate_graph(
    settings: AppSettings,
    *,
    embedder: Embedder | None = None,
    extractor: FactExtractor | None = None,
    top_k: int = 5,
    folder: Path | None = None,
) -> GraphEval:
    """Ingest the set with facts, then score every condition on its questions."""
    base = folder or graph_eval_dir()
    questions: list[dict[str, Any]] = json.loads((base / "questions.json").read_text())["questions"]
    paths = sorted((base / "docs").glob("*.md"))
    extract = extractor or RuleExtractor()
    with tempfile.TemporaryDirectory(prefix="agentbus-eval-graph-") as tmp:
        bus = settings.bus.model_copy(update={"data_dir": Path(tmp), "database_url": None})
        retrieval = settings.retrieval.model_copy(
            update={"qdrant_url": None, "qdrant_collection": "eval"}
        )
        async with (
            open_store(bus, migrate=True) as stores,
            open_retrieval(
                retrieval,
                embedder=embedder,
                reranker=make_reranker("none"),
                path=Path(tmp) / "vectors",
            ) as r,
        ):
            assert stores.facts is not None
            prepared = [
                prepare(load_path(p, source=p.stem), tenant=TENANT, chunking=r.chunking)
                for p in paths
            ]
            timed = _Timed(extract)
            ingestor = r.ingestor.with_graph(GraphIndex(stores.facts, timed))
            facts = sum([(await ingestor.ingest(d, tenant=TENANT)).facts for d in prepared])
            search = GraphSearch(stores.facts, GraphConfig(top_k=top_k))
            found = {
                q["id"]: await _given(r.searcher, search, q["question"], top_k) for q in questions
            }
    info = {
        "extractor": extract.name,
        "embedder": r.embedder.name,
        "documents": len(paths),
        "chunks": timed.chunks,
        "facts": facts,
        "facts_per_chunk": round(timed.facts / max(1, timed.chunks), 2),
        "extract_ms_per_chunk": round(timed.seconds * 1000 / max(1, timed.chunks), 3),
        "questions": len(questions),
        "top_k": top_k,
    }
    return GraphEval(_scores(questions, found), info, found)


class _Timed:
    """An extractor that counts the chunks and facts it saw and the time it took."""

    def __init__(self, inner: FactExtractor) -> None:
        self._inner = inner
        self.chunks = self.facts = 0
        self.seconds = 0.0

    @property
    def name(self) -> str:
        """The measured extractor's name."""
        return self._inner.name

    async def extract(self, texts: Sequence[str]) -> list[list[Triple]]:
        """The inner extractor's facts, timed."""
        started = time.perf_counter()
        found = await self._inner.extract(texts)
        self.seconds += time.perf_counter() - started
        self.chunks += len(texts)
        self.facts += sum(len(f) for f in found)
        return found


async def _given(
    searcher: Any, search: GraphSearch, question: str, top_k: int
) -> dict[str, list[str]]:
    """The sources (document stems) each condition puts in front of the researcher."""
    access = Access(TENANT)
    hits = await searcher.search(question, access, top_k=MERGE_TOP_K)
    documents = [
        {"id": h.chunk.id, "source": h.chunk.source, "title": h.chunk.title, "text": h.chunk.text}
        for h in hits
    ]
    graph = [p.item() for p in await search.search(question, access, top_k=top_k)]
    merged = fuse({"documents": documents[:top_k], "graph": graph}, MERGE_SOURCE_CHARS, MERGE_TOP_K)
    return {
        "documents": [d["source"] for d in documents[:top_k]],
        "documents@8": [d["source"] for d in documents],
        "graph": [g["source"] for g in graph],
        "documents+graph": [e.source for e in merged],
    }


def _scores(
    questions: list[dict[str, Any]], found: dict[str, dict[str, list[str]]]
) -> list[ConditionScore]:
    scores: list[ConditionScore] = []
    n = max(1, len(questions))
    for condition in CONDITIONS:
        recall = both = 0.0
        for q in questions:
            needed = set(q["needed"])
            got = needed & set(found[q["id"]][condition])
            recall += len(got) / len(needed)
            both += 1.0 if got == needed else 0.0
        scores.append(ConditionScore(condition, recall / n, both / n, len(questions)))
    return scores


def table(result: GraphEval) -> str:
    """The scores and the extraction's cost as plain text."""
    i = result.info
    lines = [
        f"extractor {i['extractor']}: {i['extract_ms_per_chunk']} ms/chunk, "
        f"{i['facts_per_chunk']} facts/chunk ({i['chunks']} chunks, {i['facts']} facts stored); "
        f"embedder {i['embedder']}; {i['questions']} two-hop questions, top-k {i['top_k']}",
        f"{'condition':18} {'fact recall':>11} {'both facts':>11}",
    ]
    for s in result.scores:
        lines.append(f"{s.condition:18} {s.fact_recall:>11.3f} {s.both_found:>11.3f}")
    return "\n".join(lines)
