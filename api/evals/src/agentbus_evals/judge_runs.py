"""``agentbus eval judges``: the critic's and the verifier's catch and false-alarm rates.

Each model judges the shipped (question, evidence, draft) triples on the real bus
(`agentbus_evals.judge_set`): right drafts and drafts made wrong on purpose. ``scripted`` is the
reference: it approves every draft and recomputes the case's own expression, so whatever it
catches, the recompute through the gateway caught; it checks the triples and the harness.

With ``--record`` (the whole ``test`` half), each judge's approvals and the right ones
among them are written to the shipped precision table (`agents.checks.judge_trust`), which
decides whether that judge's approval alone may make a run ``verified: yes``.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import typer

from agentbus_evals.answer_runs import SCRIPTED, host_figures
from agentbus_evals.judge_set import (
    JUDGES,
    Half,
    JudgeOutcome,
    JudgeSet,
    judge_summary,
    load_judge_set,
    run_judges,
    triples,
)
from agentbus_evals.system import load_local
from agents.checks import judge_trust
from agents.errors import LLMError
from agents.llm.local import LocalLLM
from agents.llm.ports import LLM, ChatMessage, LLMOptions, ToolDefinition
from agents.llm.scripted import ScriptedLLM, Turn, agent_of, text, turn
from agents.llm.weights import LOCAL_MODELS


def reference_judge(judge_set: JudgeSet) -> ScriptedLLM:
    """A judge that approves every draft and recomputes the case's own expression."""

    def play(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ) -> Turn:
        role = agent_of(messages, options)
        if role == "critic":
            return turn(text('{"verdict": "OK", "reason": "reads as supported"}'))
        if role == "verifier":
            return turn(text('{"verdict": "pass", "reasons": ["reads as supported"]}'))
        asked = " ".join(m.content for m in messages if m.role == "user")
        case = next((c for c in judge_set.cases if c.question in asked), None)
        checks = [{"claim": "", "expression": case.expression}] if case and case.expression else []
        if role == "recompute":
            return turn(text(json.dumps({"checks": checks})))
        return turn(text("Nothing to check."))  # the free tool pass: no call

    return ScriptedLLM(play, name=SCRIPTED)


async def evaluate_judges(
    name: str,
    judge_set: JudgeSet,
    *,
    per_kind: int = 0,
    half: Half | None = None,
    judges: Sequence[str] = tuple(JUDGES),
    overrides: dict[str, Any] | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """One model's judge summary (with ``outcomes``); an ``error`` row if it cannot load."""
    started = datetime.now(UTC).isoformat(timespec="seconds")
    before = host_figures()
    local: LocalLLM | None = None
    llm: LLM
    if name == SCRIPTED:
        llm = reference_judge(judge_set)
    else:
        try:
            local, llm = await load_local(name)
        except LLMError as e:
            return {"model": name, "error": e.code, "message": e.message, "hint": e.hint}

    def show(o: JudgeOutcome) -> None:
        if progress:
            mark = "flag" if o.flagged else ("?   " if o.unknown else "ok  ")
            typer.echo(
                f"  {o.case} {o.kind:16} {o.judge:8} {mark} {o.verdict:15} {o.seconds:6.1f}s"
                f" {o.reason[:80]}",
                err=True,
            )

    wall = time.perf_counter()
    chosen = triples(judge_set, per_kind, half)
    try:
        outcomes = await run_judges(
            llm, judge_set, chosen, judges=judges, overrides=overrides, on_outcome=show
        )
    finally:
        if local is not None:
            await local.aclose()
    row = judge_summary(name if local is None else local.name, outcomes)
    row |= {
        "half": half or "all",
        "wall_s": round(time.perf_counter() - wall, 1),
        "started": started,
        "loadavg_before": before["loadavg"],
        "loadavg_after": host_figures()["loadavg"],
        "host": before["host"],
        "threads": None if local is None else local.threads,
        "outcomes": [dataclasses.asdict(o) for o in outcomes],
    }
    return row


def record(row: dict[str, Any], path: Path | None = None) -> Path:
    """Write one model's measured judges into the precision table (the shipped one by
    default), replacing its earlier rows; returns the table's path."""
    where = path or judge_trust.table_path()
    table = judge_trust.PrecisionTable.model_validate_json(where.read_text())
    when = f"{row['started']}, load {row['loadavg_before']} -> {row['loadavg_after']}"
    for judge, rates in row["judges"].items():
        measured = judge_trust.JudgePrecision(
            model=row["model"],
            judge=judge,
            approved=rates["approved"],
            approved_right=rates["approved_right"],
            measured=when,
        )
        table = table.with_row(measured)
    where.write_text(table.model_dump_json(indent=2) + "\n")
    return where


def _line(row: dict[str, Any], judge_name: str, r: dict[str, Any]) -> str:
    precision = f"{r['approved_right']}/{r['approved']}"
    return (
        f"{row['model']} {judge_name} ({row['half']} half): caught {r['caught']} wrong drafts "
        f"({r['catch_by_kind']}), false alarms {r['false_alarms']}, unknown {r['unknown']}, "
        f"approved {r['approved']} (right {precision}), verified yes {r['verified_yes']} "
        f"(right {r['verified_yes_right']}/{r['verified_yes']}), mean {r['mean_s']} s/draft, "
        f"load {row['loadavg_before']} -> {row['loadavg_after']}"
    )


async def eval_judges(
    *,
    model: list[str] | None,
    cases: Path | None,
    per_kind: int,
    judge: list[str] | None,
    as_json: bool,
    half: Half | None = "test",
    save: bool = False,
) -> None:
    """``agentbus eval judges``: check the choices, evaluate each model's judges, print them.

    Raises:
        typer.BadParameter: an unknown model or judge, or ``save`` on less than the whole
            shipped ``test`` half.
        typer.Exit: (1) a model could not be evaluated.
    """
    if save and (half != "test" or per_kind or cases is not None):
        raise typer.BadParameter("--record measures the whole shipped test half: drop --per-kind")
    judge_set = load_judge_set(cases)
    names = model or list(LOCAL_MODELS)
    unknown = [n for n in names if n not in LOCAL_MODELS and n != SCRIPTED]
    if unknown:
        raise typer.BadParameter(f"unknown model {unknown[0]!r}; choose from {list(LOCAL_MODELS)}")
    chosen_judges = judge or list(JUDGES)
    if bad := [j for j in chosen_judges if j not in JUDGES]:
        raise typer.BadParameter(f"unknown judge {bad[0]!r}; choose from {list(JUDGES)}")
    failed = False
    for name in names:
        row = await evaluate_judges(
            name, judge_set, per_kind=per_kind, half=half, judges=chosen_judges, progress=True
        )
        failed |= "error" in row
        if save and "error" not in row:
            typer.echo(f"recorded in {record(row)}", err=True)
        if as_json:
            typer.echo(json.dumps(row))
        elif "error" in row:
            typer.echo(f"{name}: {row['error']}: {row['message']} ({row['hint']})")
        else:
            for judge_name, r in row["judges"].items():
                typer.echo(_line(row, judge_name, r))
    if failed:
        raise typer.Exit(1)
