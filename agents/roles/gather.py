"""Gather → merge, the retrieval role: query the sources in parallel, then fuse the results.

The planner (or a judge re-checking) publishes one gather branch per chosen source
(`agents.sources.fan_out`); each branch is a separate message handled by any retrieval
worker. A branch that fails or runs past its budget contributes nothing instead of holding
the others up. The branch that completes the join publishes the merge (a join barrier
keyed by run and step in Redis); the merge fuses the branches with cross-source reciprocal
rank fusion under a per-source budget, streams the unified citations, tagged with their
source, and routes on along the graph (``merged`` for evidence, ``rechecked`` for a judge).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from typing import Any

import structlog

from agents import graph
from agents.sources import Source, SourceAnswer
from agents.state import toward
from bus import tracing
from bus.commands import AgentTask, Command, GatherTask, MergeTask
from bus.events import Citation, Citations
from bus.ledger import LedgerRecord
from bus.run_state import EvidenceItem
from bus.runtime.context import Join, StepContext, StepResult, join_values
from bus.runtime.worker import Handler
from retrieval.metrics import observe_search

RRF_K = 60
log = structlog.get_logger("agents.roles.gather")


async def handle_gather(
    ctx: StepContext, command: Command, sources: Mapping[str, Source], budget_s: float
) -> StepResult:
    """Query one source within its budget and contribute the result to the join."""
    task = command.payload
    assert isinstance(task, GatherTask)
    if not tracing.ENABLED:
        return await _gather(command, task, sources, budget_s)
    attributes = {
        "agentbus.retrieval.source": task.source,
        "agentbus.retrieval.purpose": task.purpose,
    }
    with tracing.span(f"retrieve {task.source}", attributes):
        return await _gather(command, task, sources, budget_s)


async def _gather(
    command: Command, task: GatherTask, sources: Mapping[str, Source], budget_s: float
) -> StepResult:
    started = time.perf_counter()
    status: str = "ok"
    items: list[dict[str, Any]] = []
    records: list[LedgerRecord] = []
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
    observe_search(task.source, status, len(items), time.perf_counter() - started)
    merge = command.follow(
        graph.next_role(task.state.settings, "gather", "gathered"),
        MergeTask(join=task.join, purpose=task.purpose, state=task.state),
    )
    value = json.dumps(
        {"status": status, "items": items}, ensure_ascii=False, separators=(",", ":"), default=str
    )
    join = Join(name=task.join, member=task.source, value=value, expected=task.expected, then=merge)
    return StepResult(join=join, records=records)


def fuse(
    branches: Mapping[str, list[dict[str, Any]]],
    per_source_chars: int,
    top_k: int,
    start: int = 1,
) -> list[EvidenceItem]:
    """Cross-source RRF over each source's ranking, each source within a text budget.

    An item two sources found (the same ``id``: a chunk the documents search and the
    knowledge graph both reached) is one item whose scores add up, shown as the source
    that ranked it higher found it (at equal ranks, the fuller text: the graph's passage
    carries its facts too). The fused
    items are numbered ``ref`` from ``start`` (the run's next free citation number) in rank
    order and tagged with their source.
    """
    fused: dict[str, tuple[float, float, str, dict[str, Any]]] = {}
    for source, items in branches.items():
        used = 0
        for rank, item in enumerate(items):
            text = str(item.get("text", ""))
            if used + len(text) > per_source_chars and used:
                break
            used += len(text)
            score = 1.0 / (RRF_K + rank + 1)
            key = str(item.get("id", "")) or f"{source}#{rank}"
            if key in fused:
                total, best, kept_source, kept = fused[key]
                fuller = len(text) > len(str(kept.get("text", "")))
                if score > best or (score == best and fuller):
                    best, kept_source, kept = score, source, item
                fused[key] = (total + score, best, kept_source, kept)
            else:
                fused[key] = (score, score, source, item)
    scored = sorted(
        ((total, source, item) for total, _, source, item in fused.values()),
        key=lambda found: found[0],
        reverse=True,
    )
    return [
        EvidenceItem(
            ref=ref,
            source_kind=source,
            id=str(item.get("id", "")),
            source=str(item.get("source", "")),
            title=str(item.get("title", "")),
            heading=str(item.get("heading", "")),
            text=str(item.get("text", "")),
        )
        for ref, (_, source, item) in enumerate(scored[:top_k], start)
    ]


async def handle_merge(
    ctx: StepContext, command: Command, per_source_chars: int = 2000, top_k: int = 8
) -> StepResult:
    """Fuse the join's branches into the run's evidence and route on."""
    task = command.payload
    assert isinstance(task, MergeTask)
    raw = await join_values(ctx, task.join)
    branches = {name: json.loads(v).get("items", []) for name, v in raw.items()}
    state = task.state
    evidence = fuse(branches, per_source_chars, top_k, start=state.next_ref)
    if evidence:
        state = state.refs_used_to(evidence[-1].ref + 1)
    citations = Citations(
        run_id=command.run_id,
        step_id=command.step_id,
        agent="merge",
        items=[
            Citation(
                ref=e.ref,
                source=e.source,
                title=e.title,
                snippet=e.text[:200],
                source_kind=e.source_kind,
            )
            for e in evidence
        ],
    )
    if task.purpose == "evidence":
        state = state.evolve(evidence=evidence)
        outcome = "merged"
    else:
        judge = state.judge.evolve(recheck=evidence)
        state = state.evolve(judge=judge)
        outcome = "rechecked"
    node = graph.next_node(state.settings, "merge", outcome)
    state = toward(state, node)  # a team's declared agent reads the evidence next
    target = graph.role_of(state.settings, node)
    return StepResult(next=[command.follow(target, AgentTask(state=state))], events=[citations])


def make_retrieval_router(
    sources: Mapping[str, Source],
    budget_s: float,
    ingest: Handler | None = None,
    search: Handler | None = None,
    snapshot: Handler | None = None,
) -> Handler:
    """The retrieval role's handler: gather branches, merges, and (if wired) ingest
    batches, the searches other processes send (``retrieval.remote``) and the copies a
    backup asks for (``retrieval.edge_backup``)."""

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
        if kind == "snapshot" and snapshot is not None:
            return await snapshot(ctx, command)
        raise TypeError(f"retrieval got a {kind} payload")

    return handle
