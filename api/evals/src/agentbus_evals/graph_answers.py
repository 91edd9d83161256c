"""``agentbus eval graph --answers``: what a model answers to the two-hop questions in
multi mode, gathering from the documents alone and from the documents and the graph.

The set's documents are ingested with their facts into a throw-away system
(`agentbus_evals.system`); each question is asked once per condition, one at a time, and an
answer counts when it names the expected entity or figure (case and spacing aside).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentbus_evals.answer_set import ROLES
from agentbus_evals.graph_set import graph_eval_dir
from agentbus_evals.system import TENANT, eval_system
from agents.llm.ports import LLM
from bus.commands import AgentTask, Command, RunSettings, RunState, deadline_in, new_run_id
from bus.keys import Role
from bus.publish import publish, read_events
from bus.transcript import fold
from retrieval.gather_source import DOCUMENTS
from retrieval.graph.source import GRAPH

SOURCES: dict[str, list[str]] = {"documents": [DOCUMENTS], "documents+graph": [DOCUMENTS, GRAPH]}


@dataclass(frozen=True, slots=True)
class GraphAnswer:
    """One question asked under one condition."""

    id: str
    condition: str
    correct: bool
    answer: str
    seconds: float


def named(answer: str, expected: str) -> bool:
    """The answer names the expected entity or figure."""
    return " ".join(expected.lower().split()) in " ".join(answer.lower().split())


async def answer_set(
    llm: LLM,
    *,
    folder: Path | None = None,
    deadline_s: float = 600,
    overrides: dict[str, Any] | None = None,
) -> list[GraphAnswer]:
    """Ask every question under each condition; the outcomes in order."""
    base = folder or graph_eval_dir()
    questions: list[dict[str, Any]] = json.loads((base / "questions.json").read_text())["questions"]
    docs = [(p.stem, p.read_text()) for p in sorted((base / "docs").glob("*.md"))]
    today = dt.datetime(2026, 12, 1, 12, tzinfo=dt.UTC)
    outcomes: list[GraphAnswer] = []
    async with eval_system(llm, ROLES, today, documents=docs, overrides=overrides) as system:
        for q in questions:
            for condition, sources in SOURCES.items():
                run = RunSettings(mode="multi", use_tools=True, sources=sources)
                command = Command(
                    run_id=new_run_id(),
                    tenant_id=TENANT,
                    subject="eval",
                    role=Role.INTAKE,
                    deadline=deadline_in(deadline_s),
                    payload=AgentTask(state=RunState(question=q["question"], settings=run)),
                )
                started = time.perf_counter()
                await publish(system.redis, command, system.settings.bus)
                async with asyncio.timeout(deadline_s + 30):
                    events = [
                        e async for _, e in read_events(system.redis, command.run_id, command.shard)
                    ]
                answer = fold(events).answer or ""
                outcomes.append(
                    GraphAnswer(
                        q["id"],
                        condition,
                        named(answer, q["answer"]),
                        answer,
                        time.perf_counter() - started,
                    )
                )
    return outcomes


def answers_table(outcomes: list[GraphAnswer]) -> str:
    """Correct answers per condition, and each question's outcome."""
    lines = [f"{'condition':18} {'correct':>8} {'mean s':>8}"]
    for condition in SOURCES:
        mine = [o for o in outcomes if o.condition == condition]
        right = sum(o.correct for o in mine)
        mean = sum(o.seconds for o in mine) / max(1, len(mine))
        lines.append(f"{condition:18} {right:>4}/{len(mine):<3} {mean:>8.1f}")
    for o in outcomes:
        mark = "ok " if o.correct else "-- "
        lines.append(f"{mark}{o.id} {o.condition:16} {' '.join(o.answer.split())[:100]}")
    return "\n".join(lines)
