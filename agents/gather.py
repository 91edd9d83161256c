"""Gather → merge: fan a query out to retrieval sources in parallel, then fuse the results.

The planner (or a judge re-checking) publishes one gather branch per chosen source; each
branch is a separate message handled by any retrieval worker. A branch that fails or runs
past its budget contributes nothing instead of holding the others up. The branch that
completes the join publishes the merge (a join barrier keyed by run and step in Redis);
the merge fuses the branches with cross-source reciprocal rank fusion under a per-source
budget and streams the unified citations, tagged with their source.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from agents import graph
from agents.context import dumps
from bus.commands import AgentTask, Command, GatherTask, MergeTask, RunState
from bus.events import Citation, Citations
from bus.keys import Role
from bus.ledger import LedgerRecord
from bus.runtime.context import Join, StepContext, StepResult, join_values
from bus.runtime.worker import Handler


@dataclass(frozen=True, slots=True)
class SourceAnswer:
    """What a source found, with the store records its search leaves (a web search's
    audit row), which the gather step commits with its contribution."""

    items: list[dict[str, Any]]
    records: list[LedgerRecord] = field(default_factory=lambda: [])


#: A retrieval source: (command, query) -> ranked items {id, source, title, text}, or a
#: `SourceAnswer` when the search leaves records too.
Source = Callable[[Command, str], Awaitable[list[dict[str, Any]] | SourceAnswer]]

RRF_K = 60
log = structlog.get_logger("agents.gather")


def fan_out(command: Command, state: RunState, purpose: str, return_to: str) -> list[Command]:
    """One gather branch per chosen source (all sources when none was chosen)."""
    sources = state.chosen_sources or state.settings.sources
    join = f"{purpose}-{command.step + 1}"
    query = state.interpreted or state.question
    return [
        command.follow(
            Role.RETRIEVAL,
            GatherTask(
                source=name,
                query=query,
                join=join,
                expected=len(sources),
                purpose=purpose,  # type: ignore[arg-type]
                return_to=return_to,
                state=state,
            ),
            branch=name,
        )
        for name in sources
    ]


async def handle_gather(
    ctx: StepContext, command: Command, sources: Mapping[str, Source], budget_s: float
) -> StepResult:
    """Query one source within its budget and contribute the result to the join."""
    task = command.payload
    assert isinstance(task, GatherTask)
    status, items, records = "ok", [], []
    search = sources.get(task.source)
    try:
        if search is None:
            status = "unknown_source"
        else:
            async with asyncio.timeout(budget_s):
                found = await search(command, task.query)
            if isinstance(found, SourceAnswer):
                items, records = found.items, found.records
            else:
                items = found
    except TimeoutError:
        status = "timeout"
    except Exception as e:  # a failing source must not hold the others up
        log.warning("source failed", source=task.source, error=repr(e))
        status = "error"
    merge = command.model_copy(
        update={
            "step": command.step + 1,
            "branch": None,
            "role": Role.RETRIEVAL,
            "payload": MergeTask(
                join=task.join, purpose=task.purpose, return_to=task.return_to, state=task.state
            ),
        }
    )
    value = dumps({"status": status, "items": items})
    join = Join(name=task.join, member=task.source, value=value, expected=task.expected, then=merge)
    return StepResult(join=join, records=records)


def fuse(
    branches: Mapping[str, list[dict[str, Any]]], per_source_chars: int, top_k: int
) -> list[dict[str, Any]]:
    """Cross-source RRF over each source's ranking, each source within a text budget."""
    scored: list[tuple[float, dict[str, Any]]] = []
    for source, items in branches.items():
        used = 0
        for rank, item in enumerate(items):
            text = str(item.get("text", ""))
            if used + len(text) > per_source_chars and used:
                break
            used += len(text)
            scored.append((1.0 / (RRF_K + rank + 1), {**item, "source_kind": source}))
    scored.sort(key=lambda pair: pair[0], reverse=True)
    fused = [item for _, item in scored[:top_k]]
    return [{**item, "ref": i + 1} for i, item in enumerate(fused)]


async def handle_merge(
    ctx: StepContext, command: Command, per_source_chars: int = 2000, top_k: int = 8
) -> StepResult:
    """Fuse the join's branches into the run's evidence and route on."""
    task = command.payload
    assert isinstance(task, MergeTask)
    raw = await join_values(ctx, task.join)
    branches = {name: json.loads(v).get("items", []) for name, v in raw.items()}
    evidence = fuse(branches, per_source_chars, top_k)
    citations = Citations(
        run_id=command.run_id,
        step_id=command.step_id,
        agent="merge",
        items=[
            Citation(
                ref=e["ref"],
                source=str(e.get("source", "")),
                title=str(e.get("title", "")),
                snippet=str(e.get("text", ""))[:200],
                source_kind=e["source_kind"],
            )
            for e in evidence
        ],
    )
    state = task.state
    if task.purpose == "evidence":
        state = state.model_copy(update={"evidence": evidence})
        target = graph.next_role(state.settings, "merge", "merged")
    else:
        state = state.model_copy(update={"judge": {**state.judge, "recheck": evidence}})
        target = graph.NODE_ROLES[task.return_to]
    return StepResult(next=[command.follow(target, AgentTask(state=state))], events=[citations])


def make_retrieval_router(
    sources: Mapping[str, Source],
    budget_s: float,
    ingest: Handler | None = None,
    search: Handler | None = None,
) -> Handler:
    """The retrieval role's handler: gather branches, merges, and (if wired) ingest
    batches and the searches other processes send (``retrieval.remote``)."""

    async def handle(ctx: StepContext, command: Command) -> StepResult:
        kind = command.payload.kind
        if kind == "gather":
            return await handle_gather(ctx, command, sources, budget_s)
        if kind == "merge":
            return await handle_merge(ctx, command)
        if kind == "ingest" and ingest is not None:
            return await ingest(ctx, command)
        if kind == "search" and search is not None:
            return await search(ctx, command)
        raise TypeError(f"retrieval got a {kind} payload")

    return handle
