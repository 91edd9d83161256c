"""The answer eval: questions that need a tool, scored on the answer and the tool chosen.

The set ships in ``api/evals/data/answer_eval.json``: arithmetic (calculator), dates relative
to a fixed "today" (current_time) and facts from small fictional documents (search_docs).
Each question is asked as a single-mode run through the whole system: intake, researcher,
gateway and finalizer workers on an embedded Redis and store in a temporary folder, with the
documents ingested into a throw-away vector store. The agents' clock and the current_time
tool are both fixed to the set's "today", so date answers are checkable.

An answer is correct when it contains the expected value: a number (within a small
tolerance, thousands separators allowed), a date (ISO or written out), or one of a list of
strings (case-insensitive). The tool choice is right when the run's first tool call is the
expected tool.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import json
import math
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agents.llm.ports import LLM
from api.compose.connection import connect
from api.compose.roles import Roles
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

TENANT = "eval"
ROLES = (keys.Role.INTAKE, keys.Role.RESEARCHER, keys.Role.GATEWAY, keys.Role.FINALIZER)
#: Relative tolerance of a number match (and 0.005 absolute, for rounded decimals).
REL_TOL = 1e-4
ABS_TOL = 0.005
_NUMBER = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")


class Expect(BaseModel):
    """What a correct answer contains: exactly one of a number, a date, or any of strings."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    number: float | None = None
    date: dt.date | None = None
    any: list[str] | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _one(self) -> Expect:
        if sum(v is not None for v in (self.number, self.date, self.any)) != 1:
            raise ValueError("expect needs exactly one of number, date, any")
        return self


class Question(BaseModel):
    """One question, the tool a good run calls first, and the answer it must contain."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str = Field(min_length=1)
    kind: Literal["arithmetic", "date", "document"]
    question: str = Field(min_length=1)
    tool: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(description="A call of `tool` that answers it.")
    expect: Expect


class Document(BaseModel):
    """A document the eval ingests before asking (Markdown text)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str = Field(pattern=r"^[a-z0-9-]+$")
    text: str = Field(min_length=1)


class AnswerSet(BaseModel):
    """The shipped question set."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    about: str = ""
    today: dt.datetime
    documents: list[Document]
    questions: list[Question] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> AnswerSet:
        if self.today.tzinfo is None:
            raise ValueError("today needs a UTC offset")
        ids = [q.id for q in self.questions]
        if len(set(ids)) != len(ids):
            raise ValueError("question ids must be unique")
        return self


def load_set(path: Path | None = None) -> AnswerSet:
    """The shipped set, or the one at ``path``."""
    source = path or Path(str(resources.files("api.evals").joinpath("data", "answer_eval.json")))
    return AnswerSet.model_validate_json(source.read_text())


def in_turns(answer_set: AnswerSet, per_kind: int = 0) -> AnswerSet:
    """The set with its kinds taking turns (arithmetic, date, document, arithmetic, ...), so
    the first questions, or a run stopped early, cover every kind; ``per_kind`` > 0 keeps
    only the first that many of each kind."""
    by_kind: dict[str, list[Question]] = {}
    for q in answer_set.questions:
        by_kind.setdefault(q.kind, []).append(q)
    if per_kind:
        by_kind = {k: qs[:per_kind] for k, qs in by_kind.items()}
    turns = [q for group in itertools.zip_longest(*by_kind.values()) for q in group if q]
    return answer_set.model_copy(update={"questions": turns})


def numbers_in(text: str) -> list[float]:
    """Every number written in ``text`` (``7,006,652`` is one number)."""
    return [float(m.replace(",", "")) for m in _NUMBER.findall(text)]


def _date_forms(day: dt.date) -> list[str]:
    month, d, y = day.strftime("%B"), day.day, day.year
    suffix = "th" if 10 <= d % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(d % 10, "th")
    return [
        day.isoformat(),
        f"{d} {month} {y}",
        f"{d}{suffix} {month} {y}",
        f"{d:02d} {month} {y}",
        f"{month} {d}, {y}",
        f"{month} {d} {y}",
        f"{month} {d}{suffix}, {y}",
        f"{d}{suffix} of {month} {y}",
        f"{d}{suffix} of {month}, {y}",
        f"{d:02d}/{day.month:02d}/{y}",
    ]


def is_correct(answer: str, expect: Expect) -> bool:
    """Whether ``answer`` contains the expected value."""
    if expect.number is not None:
        want = expect.number
        return any(
            math.isclose(n, want, rel_tol=REL_TOL, abs_tol=ABS_TOL) for n in numbers_in(answer)
        )
    text = " ".join(answer.split()).casefold()
    if expect.date is not None:
        return any(form.casefold() in text for form in _date_forms(expect.date))
    return any(s.casefold() in text for s in expect.any or ())


@dataclass(frozen=True, slots=True)
class Outcome:
    """One question's run: status, tools called (in order), the answer and its scores."""

    id: str
    kind: str
    status: str
    tools: list[str]
    answer: str
    correct: bool
    tool_ok: bool
    seconds: float


def score(
    question: Question, status: str, tools: list[str], answer: str, seconds: float
) -> Outcome:
    """Score one run (a run that did not end ``done`` is not correct)."""
    return Outcome(
        id=question.id,
        kind=question.kind,
        status=status,
        tools=tools,
        answer=answer,
        correct=status == "done" and is_correct(answer, question.expect),
        tool_ok=bool(tools) and tools[0] == question.tool,
        seconds=round(seconds, 2),
    )


def summary(model: str, outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """Share correct, tool-choice accuracy and mean latency, overall and per kind."""

    def block(items: Sequence[Outcome]) -> dict[str, Any]:
        n = max(1, len(items))
        return {
            "questions": len(items),
            "correct": round(sum(o.correct for o in items) / n, 3),
            "tool_choice": round(sum(o.tool_ok for o in items) / n, 3),
            "mean_s": round(sum(o.seconds for o in items) / n, 2),
        }

    kinds = sorted({o.kind for o in outcomes})
    return {
        "model": model,
        **block(outcomes),
        "by_kind": {k: block([o for o in outcomes if o.kind == k]) for k in kinds},
        "errors": sum(o.status != "done" for o in outcomes),
    }


def outcome_dict(outcome: Outcome) -> dict[str, Any]:
    """JSON form of one outcome."""
    return asdict(outcome)


async def run_set(
    llm: LLM,
    answer_set: AnswerSet,
    *,
    overrides: dict[str, Any] | None = None,
    deadline_s: float = 600,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Ask every question of ``answer_set`` through the system, one at a time.

    Args:
        llm: the model the agents use.
        answer_set: the questions, their documents and "today".
        overrides: settings on top of the environment's (``AppSettings.load`` names); the
            data folder, Redis, store and vector store default to a temporary embedded set.
        deadline_s: each run's deadline.
        on_outcome: called after each question (progress).

    Returns:
        One outcome per question asked: all of them, or those before SIGINT/SIGTERM.
    """
    today = answer_set.today

    def clock() -> dt.datetime:
        return today

    with tempfile.TemporaryDirectory(prefix="agentbus-eval-answers-") as tmp:
        folder = Path(tmp)
        local: dict[str, Any] = {
            "data_dir": folder,
            "redis_url": None,
            "redis_cluster": False,
            "database_url": None,
            "qdrant_url": None,
            "qdrant_path": None,
            "metrics_port": None,
        }
        s = AppSettings.load(**(local | (overrides or {})))
        async with (
            open_store(s.bus, migrate=True) as stores,
            connect(s.bus, embedded=True) as conn,
            open_retrieval(s.retrieval, path=folder / "vectors") as retrieval,
        ):
            for doc in answer_set.documents:
                path = folder / f"{doc.name}.md"
                path.write_text(doc.text)
                prepared = prepare(
                    load_path(path, source=doc.name), tenant=TENANT, chunking=retrieval.chunking
                )
                await retrieval.ingestor.ingest(prepared, tenant=TENANT)
            # The deployment's tools, with current_time on the set's clock.
            tools = [
                CurrentTime(clock) if t.spec.name == "current_time" else t for t in builtin_tools()
            ]
            search = SearchDocs(
                in_process(retrieval.searcher), default_top_k=s.retrieval.retrieval_top_k
            )
            registry = ToolRegistry([*tools, search])
            roles = Roles(s, stores, llm=llm, registry=registry, retrieval=retrieval, clock=clock)
            workers = build_workers(ROLES, conn.redis, s.bus, roles, concurrency=1)
            for w in workers:
                await w.ensure_groups()
            runner = Runner(workers, conn.redis)
            running = asyncio.create_task(runner.run())
            outcomes: list[Outcome] = []
            try:
                for q in answer_set.questions:
                    asking = asyncio.ensure_future(_ask(conn.redis, s, q, deadline_s))
                    await asyncio.wait({asking, running}, return_when=asyncio.FIRST_COMPLETED)
                    if not asking.done():  # SIGINT/SIGTERM drained the workers: stop here
                        asking.cancel()
                        await asyncio.gather(asking, return_exceptions=True)
                        break
                    outcome = asking.result()
                    outcomes.append(outcome)
                    if on_outcome is not None:
                        on_outcome(outcome)
            finally:
                runner.stop()
                await asyncio.wait_for(running, 60)
    return outcomes


async def _ask(redis: Any, s: AppSettings, q: Question, deadline_s: float) -> Outcome:
    command = Command(
        run_id=new_run_id(),
        tenant_id=TENANT,
        subject="eval",
        role=keys.Role.INTAKE,
        deadline=deadline_in(deadline_s),
        payload=AgentTask(
            state=RunState(
                question=q.question,
                settings=RunSettings(mode="single", use_tools=True, think=False),
            )
        ),
    )
    started = time.perf_counter()
    await publish(redis, command, s.bus)
    async with asyncio.timeout(deadline_s + 30):
        events = [e async for _, e in read_events(redis, command.run_id, command.shard)]
    seconds = time.perf_counter() - started
    transcript = fold(events)
    tools = [e.tool for e in events if e.type == "tool_call"]
    return score(q, transcript.status or "unknown", tools, transcript.answer, seconds)


def to_json(rows: Sequence[dict[str, Any]]) -> str:
    """One JSON object per line."""
    return "\n".join(json.dumps(r) for r in rows)
