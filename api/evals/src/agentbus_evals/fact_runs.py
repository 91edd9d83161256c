"""``agentbus eval facts``: each extractor on the fact set's passages, ingested for real.

Every passage of the chosen half is a document ingested through the `retrieval.ingest`
Ingestor with the knowledge graph's index (embedded Qdrant Edge and SQLite in a temporary
folder), so the seconds per document are what `agentbus ingest` spends; the facts each
document yields are scored against the set (`agentbus_evals.fact_set`).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentbus_evals.answer_runs import host_figures
from agentbus_evals.fact_set import (
    Half,
    Passage,
    PassageScore,
    load_passages,
    score_passage,
    score_set,
)
from api.compose.settings import AppSettings
from bus.store import Triple, open_store
from retrieval.graph.index import GraphIndex
from retrieval.ingest import prepare
from retrieval.loaders import parse
from retrieval.ports import FactExtractor
from retrieval.rerankers import make_reranker
from retrieval.stack import open_retrieval

TENANT = "eval"


class _Recorded:
    """An extractor that keeps what it found for each text."""

    def __init__(self, inner: FactExtractor) -> None:
        self._inner = inner
        self.found: list[Triple] = []
        self.seconds = 0.0

    @property
    def name(self) -> str:
        """The measured extractor's name."""
        return self._inner.name

    async def extract(self, texts: Sequence[str]) -> list[list[Triple]]:
        """The inner extractor's facts, kept and timed."""
        started = time.perf_counter()
        found = await self._inner.extract(texts)
        self.seconds += time.perf_counter() - started
        for facts in found:
            self.found.extend(facts)
        return found


@dataclass(slots=True)
class ExtractorRun:
    """One extractor's scores on a half, its cost, and each passage's findings."""

    extractor: str
    passages: list[PassageScore] = field(default_factory=list[PassageScore])
    extract_s: list[float] = field(default_factory=list[float])
    ingest_s: list[float] = field(default_factory=list[float])
    info: dict[str, Any] = field(default_factory=dict[str, Any])

    def row(self) -> dict[str, Any]:
        """The summary as one JSON object."""
        total = score_set(self.passages)
        n = max(1, len(self.passages))
        return {
            "extractor": self.extractor,
            "passages": len(self.passages),
            "precision": round(total.precision, 4),
            "recall": round(total.recall, 4),
            "f1": round(total.f1, 4),
            "extracted": total.extracted,
            "agreed": total.agreed,
            "gold": total.gold,
            "found": total.found,
            "extract_s_per_doc": round(sum(self.extract_s) / n, 3),
            "ingest_s_per_doc": round(sum(self.ingest_s) / n, 3),
            **self.info,
        }


async def run_extractor(
    settings: AppSettings, extractor: FactExtractor, passages: Sequence[Passage], label: str
) -> ExtractorRun:
    """Ingest each passage as a document with ``extractor`` and score the facts it yields."""
    run = ExtractorRun(label)
    run.info = {"started": datetime.now(UTC).isoformat(timespec="seconds"), **host_figures()}
    with tempfile.TemporaryDirectory(prefix="agentbus-eval-facts-") as tmp:
        bus = settings.bus.model_copy(update={"data_dir": Path(tmp), "database_url": None})
        retrieval = settings.retrieval.model_copy(
            update={"qdrant_url": None, "qdrant_collection": "eval"}
        )
        async with (
            open_store(bus, migrate=True) as stores,
            open_retrieval(
                retrieval, reranker=make_reranker("none"), path=Path(tmp) / "vectors"
            ) as r,
        ):
            assert stores.facts is not None
            for passage in passages:
                recorded = _Recorded(extractor)
                ingestor = r.ingestor.with_graph(GraphIndex(stores.facts, recorded))
                doc = parse(passage.text.encode(), source=passage.id, kind="text")
                prepared = prepare(doc, tenant=TENANT, chunking=r.chunking)
                started = time.perf_counter()
                await ingestor.ingest(prepared, tenant=TENANT)
                run.ingest_s.append(time.perf_counter() - started)
                run.extract_s.append(recorded.seconds)
                run.passages.append(score_passage(passage, recorded.found))
    run.info |= {"ended": datetime.now(UTC).isoformat(timespec="seconds"), **_load_after()}
    return run


def _load_after() -> dict[str, str]:
    return {"loadavg_after": host_figures()["loadavg"]}


def table(runs: Sequence[ExtractorRun], half: str) -> str:
    """The runs as plain text, one line per extractor."""
    lines = [
        f"fact extraction, {half} half: precision = extracted facts a reader agrees with",
        f"{'extractor':28} {'precision':>9} {'recall':>7} {'facts':>6} "
        f"{'extract s/doc':>13} {'ingest s/doc':>12}",
    ]
    for run in runs:
        r = run.row()
        lines.append(
            f"{r['extractor']:28} {r['precision']:>9.3f} {r['recall']:>7.3f} "
            f"{r['extracted']:>6} {r['extract_s_per_doc']:>13.3f} {r['ingest_s_per_doc']:>12.3f}"
        )
    return "\n".join(lines)


def extractors(names: Sequence[str]) -> list[str]:
    """The extractor names, checked (rules, a local model, or ``configured``).

    Raises:
        typer.BadParameter: a name is none of those.
    """
    import typer

    from agents.llm.weights import LOCAL_MODELS

    known = ["rules", *LOCAL_MODELS, "configured"]  # a list: the message keeps this order
    unknown = [n for n in names if n not in known]
    if unknown:
        raise typer.BadParameter(f"unknown extractor {unknown[0]!r}; choose {', '.join(known)}")
    return list(names)


async def run_extractors(
    names: Sequence[str], half: Half | None, *, show: bool, as_json: bool
) -> list[ExtractorRun]:
    """Run each named extractor on the half and print its row (and, with ``show``, what
    each passage got wrong or missed)."""
    import dataclasses
    import json

    import typer

    from agentbus_evals.system import load_local
    from agents.llm.local import LocalLLM
    from agents.understanding.fact_extractor import ModelExtractor
    from api.compose.roles import make_llm
    from retrieval.graph.rules import RuleExtractor

    settings = AppSettings.load()
    passages = load_passages(half)
    runs: list[ExtractorRun] = []
    for name in names:
        local: LocalLLM | None = None
        extractor: FactExtractor
        if name == "rules":
            extractor = RuleExtractor()
        elif name == "configured":
            extractor = ModelExtractor(make_llm(settings.agents))
        else:
            local, llm = await load_local(name)
            extractor = ModelExtractor(llm)
        try:
            run = await run_extractor(settings, extractor, passages, name)
        finally:
            if local is not None:
                await local.aclose()
        if isinstance(extractor, ModelExtractor):
            run.info["failed_calls"] = extractor.failed_calls
        runs.append(run)
        if as_json:
            row = run.row() | {"half": half or "all"}
            row["passages_scored"] = [dataclasses.asdict(p) for p in run.passages]
            typer.echo(json.dumps(row, ensure_ascii=False))
        if show:
            for p in run.passages:
                for wrong in p.wrong:
                    typer.echo(f"  {name} {p.passage} wrong: {wrong}", err=True)
                for missed in p.missed:
                    typer.echo(f"  {name} {p.passage} missed: {missed}", err=True)
    if not as_json:
        typer.echo(table(runs, half or "all"))
    return runs
