"""Local-model benchmark (``agentbus bench local``): the shipped answer questions, asked of
each installed local model through the whole system, with what every model call cost.

For each model, mode (``single``, ``multi`` = multi accurate) and concurrency, the questions
of ``agentbus_evals/data/answer_eval.json`` (kinds in turn, ``questions`` of them) run as real
runs through the workers on an embedded temporary system (as `agentbus_evals.answer_set` does,
with every role multi mode needs). One warm-up question, not counted, runs first for each
model. `LocalLLM.on_call` collects a `CallRecord` per completion; `agentbus_bench.local_figures`
turns them into per-kind and per-run figures. Old behaviour for comparison: ``parallel=1``
and no draft is the adapter as it was before slots (one slot, every call re-filling the
previous one's prompt).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import os
import sys
import tempfile
import time
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentbus_bench.local_figures import by_kind, run_figures, summary
from agentbus_evals.answer_set import TENANT, AnswerSet, Question, in_turns, load_set, score
from agents.llm.local import LocalLLM
from agents.llm.local_calls import CallRecord
from agents.llm.observed import ObservedLLM
from agents.llm.ports import LLM
from api.catalogue import record_documents
from api.compose.connection import connect
from api.compose.roles import RUN_ROLES, Roles, make_llm
from api.compose.settings import AppSettings
from api.compose.workers import build_workers
from bus import keys
from bus.commands import AgentTask, Command, RunSettings, RunState, deadline_in, new_run_id
from bus.publish import publish, read_events
from bus.runtime.runner import Runner
from bus.store import open_store
from bus.transcript import fold
from gateway.registry import ToolRegistry
from gateway.tools import builtin_tools
from gateway.tools.current_time import CurrentTime
from gateway.tools.search_docs import SearchDocs, in_process
from retrieval.ingest import prepare
from retrieval.loaders import load_path
from retrieval.stack import open_retrieval


@dataclass(frozen=True, slots=True)
class Config:
    """One model configuration: the model, its slots, draft model, threads, and whether
    the step after a tool result decides and answers in one generation."""

    model: str
    parallel: int
    draft: str = "none"
    threads: int | None = None
    fold: bool = True

    def label(self) -> str:
        """``model p=N draft=D t=T fold=on``."""
        threads = self.threads or "auto"
        fold = "on" if self.fold else "off"
        return f"{self.model} p={self.parallel} draft={self.draft} t={threads} fold={fold}"


def load_average() -> str:
    """The host's 1/5/15-minute load (``uptime``'s figures)."""
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


class System:
    """The workers of every role on an embedded temporary Redis, store and vector store."""

    def __init__(self, llm: LLM, answer_set: AnswerSet, concurrency: int) -> None:
        self.llm, self.answer_set, self.concurrency = llm, answer_set, concurrency
        self.redis: Any = None
        self.settings: AppSettings | None = None
        self._runner: asyncio.Task[None] | None = None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncGenerator[System]:
        """Start the workers; stop them on exit."""
        today = self.answer_set.today

        def clock() -> dt.datetime:
            return today

        with tempfile.TemporaryDirectory(prefix="agentbus-bench-local-") as tmp:
            folder = Path(tmp)
            s = AppSettings.load(
                data_dir=folder,
                redis_url=None,
                redis_cluster=False,
                database_url=None,
                qdrant_url=None,
                qdrant_path=None,
                metrics_port=None,
            )
            async with (
                open_store(s.bus, migrate=True) as stores,
                connect(s.bus, embedded=True) as conn,
                open_retrieval(s.retrieval, path=folder / "vectors") as retrieval,
            ):
                for doc in self.answer_set.documents:
                    path = folder / f"{doc.name}.md"
                    path.write_text(doc.text)
                    prepared = prepare(
                        load_path(path, source=doc.name), tenant=TENANT, chunking=retrieval.chunking
                    )
                    await retrieval.ingestor.ingest(prepared, tenant=TENANT)
                    if stores.documents is not None:  # catalogued, as an upload is
                        await record_documents(
                            stores.documents,
                            [(prepared, len(doc.text.encode()))],
                            tenant=TENANT,
                            subject="bench",
                            job_id="bench",
                        )
                tools = [
                    CurrentTime(clock) if t.spec.name == "current_time" else t
                    for t in builtin_tools()
                ]
                search = SearchDocs(
                    in_process(retrieval.searcher), default_top_k=s.retrieval.retrieval_top_k
                )
                registry = ToolRegistry([*tools, search])
                roles = Roles(
                    s, stores, llm=self.llm, registry=registry, retrieval=retrieval, clock=clock
                )
                workers = build_workers(
                    RUN_ROLES, conn.redis, s.bus, roles, concurrency=self.concurrency
                )
                for w in workers:
                    await w.ensure_groups()
                runner = Runner(workers, conn.redis)
                task = asyncio.create_task(runner.run())
                self.redis, self.settings, self._runner = conn.redis, s, task
                try:
                    yield self
                finally:
                    runner.stop()
                    await asyncio.wait_for(task, 60)

    async def ask(self, q: Question, mode: str) -> tuple[str, dict[str, Any]]:
        """Run one question; (run id, outcome fields: status, tools, correct, seconds)."""
        assert self.settings is not None
        multi = mode == "multi"
        command = Command(
            run_id=new_run_id(),
            tenant_id=TENANT,
            subject="bench",
            role=keys.Role.INTAKE,
            deadline=deadline_in(900),
            payload=AgentTask(
                state=RunState(
                    question=q.question,
                    settings=RunSettings(
                        mode="multi" if multi else "single",
                        accuracy="accurate" if multi else "standard",
                        use_tools=True,
                        think=False,
                    ),
                )
            ),
        )
        started = time.perf_counter()
        await publish(self.redis, command, self.settings.bus)
        assert self._runner is not None
        reading = asyncio.ensure_future(self._events(command))
        await asyncio.wait({reading, self._runner}, return_when=asyncio.FIRST_COMPLETED)
        if not reading.done():  # SIGINT/SIGTERM drained the workers: stop the benchmark
            reading.cancel()
            await asyncio.gather(reading, return_exceptions=True)
            raise KeyboardInterrupt
        events = reading.result()
        seconds = time.perf_counter() - started
        transcript = fold(events)
        tools = [e.tool for e in events if e.type == "tool_call"]
        o = score(q, transcript.status or "unknown", tools, transcript.answer, seconds)
        return command.run_id, {
            "id": o.id,
            "status": o.status,
            "tools": o.tools,
            "correct": o.correct,
            "seconds": seconds,
            "answer": o.answer[:200],
        }

    async def _events(self, command: Command) -> list[Any]:
        async with asyncio.timeout(930):
            return [e async for _, e in read_events(self.redis, command.run_id, command.shard)]


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


async def _measure(
    system: System,
    local: LocalLLM,
    records: list[CallRecord],
    questions: Sequence[Question],
    mode: str,
    concurrency: int,
) -> dict[str, Any]:
    """One mode at one concurrency: the questions, ``concurrency`` in flight at once."""
    records.clear()
    load_before = load_average()
    pending = list(questions)
    runs: list[dict[str, Any]] = []

    async def client() -> None:
        while pending:
            q = pending.pop(0)
            run_id, outcome = await system.ask(q, mode)
            row = outcome | run_figures(run_id, outcome["seconds"], records)
            row.pop("seconds")
            runs.append(row)
            mark = "ok " if row["correct"] else "bad"
            _progress(
                f"  {mode} c={concurrency} {row['id']} {mark} {row['total_s']:6.1f}s "
                f"model {row['model_s']:.1f}s tools {row['tools']} load {load_average()}"
            )

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    wall = time.perf_counter() - started
    return {
        "mode": mode if mode == "single" else "multi accurate",
        "concurrency": concurrency,
        **summary(runs, wall),
        "by_kind": by_kind(records),
        "loadavg_before": load_before,
        "loadavg_after": load_average(),
        "runs_detail": runs,
    }


async def bench_model(
    config: Config,
    answer_set: AnswerSet,
    *,
    modes: Sequence[str],
    concurrencies: Sequence[int],
    warm_up: Question | None = None,
) -> dict[str, Any]:
    """Every mode x concurrency of one model configuration (one load, one warm-up run of
    ``warm_up``, by default the first question: best a question not measured, so the
    measured ones find only the shared prefixes cached, not their own)."""
    base = AppSettings.load().agents
    agents = base.model_copy(
        update={
            "llm": "local",
            "llm_local_model": config.model,
            "llm_parallel": config.parallel,
            "llm_draft_model": config.draft,
            "llm_threads": config.threads,
            "llm_fold_answer": config.fold,
        }
    )
    observed = make_llm(agents)
    assert isinstance(observed, ObservedLLM) and isinstance(observed.inner, LocalLLM)
    local = observed.inner
    records: list[CallRecord] = []
    local.on_call = records.append
    await local.load()
    row: dict[str, Any] = {
        "model": local.name,
        "config": config.label(),
        "parallel": local.parallel,
        "draft": local.draft_name,
        "threads": local.threads,
        "load_s": round(local.load_seconds or 0.0, 1),
        "host": f"{os.uname().machine} {os.cpu_count()} cpu",
        "results": [],
    }
    try:
        async with System(observed, answer_set, max(4, *concurrencies)).running() as system:
            warm = warm_up or answer_set.questions[0]
            _progress(f"{config.label()}: warm-up {warm.id}")
            await system.ask(warm, modes[0])
            for mode in modes:
                for c in concurrencies:
                    _progress(f"{config.label()}: {mode} at concurrency {c}")
                    row["results"].append(
                        await _measure(system, local, records, answer_set.questions, mode, c)
                    )
    finally:
        await local.aclose()
    return row


def main(
    *,
    configs: Sequence[Config],
    modes: Sequence[str],
    concurrencies: Sequence[int],
    questions: int,
    as_json: bool,
) -> list[dict[str, Any]]:
    """Run every configuration and print its figures (one JSON line each with ``as_json``)."""
    answer_set = in_turns(load_set())
    warm_up = answer_set.questions[-1]  # the last question: not measured unless all are
    if questions:
        answer_set = answer_set.model_copy(update={"questions": answer_set.questions[:questions]})
    rows: list[dict[str, Any]] = []
    for config in configs:
        row = asyncio.run(
            bench_model(
                config, answer_set, modes=modes, concurrencies=concurrencies, warm_up=warm_up
            )
        )
        rows.append(row)
        print(json.dumps(row) if as_json else render(row), flush=True)
    return rows


def render(row: dict[str, Any]) -> str:
    """A model configuration's figures as text."""
    lines = [f"{row['config']} ({row['model']}, load {row['load_s']} s, {row['host']})"]
    for r in row["results"]:
        lines.append(
            f"  {r['mode']} x{r['concurrency']}: {r['runs']} runs in {r['wall_s']} s, mean "
            f"{r['mean_total_s']} s (model {r['mean_model_s']} s, other {r['mean_other_s']} s), "
            f"after tool {r['mean_after_tool_s']} s, correct {r['correct']:.0%}, "
            f"load {r['loadavg_before']} -> {r['loadavg_after']}"
        )
        for kind, k in r["by_kind"].items():
            extra = f" accept {k['draft_acceptance']:.0%}" if "draft_acceptance" in k else ""
            lines.append(
                f"    {kind:24} {k['calls']:3} calls  prompt {k['prompt_tokens']:6.0f}  "
                f"prefill {k['prefill_tokens']:6.0f}  cached {k['cached_tokens']:6.0f}  "
                f"decode {k['decode_tokens']:5.0f} @ {k['decode_tps']:5.1f} tok/s  "
                f"first {k['first_token_s']:5.2f} s  wall {k['wall_s']:5.2f} s{extra}"
            )
    return "\n".join(lines)
