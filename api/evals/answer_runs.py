"""``agentbus eval answers``: the shipped tool-needing questions, asked of each local model.

Each model answers the whole set through the system (`api.evals.answer_set`); the report
gives, per model, the share answered correctly, the tool-choice accuracy and the mean
latency. ``scripted`` is the reference model: it makes each question's reference tool call
and answers with the tool's result, so it checks the questions and the harness.
"""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from agents.errors import LLMError
from agents.llm.local import LocalLLM
from agents.llm.observed import ObservedLLM
from agents.llm.ports import LLM, ChatMessage, LLMOptions, ToolDefinition
from agents.llm.scripted import ScriptedLLM, Turn, text, tool_call, turn
from agents.llm.weights import LOCAL_MODELS
from api.cli.common import run_async, settings
from api.compose.roles import make_llm
from api.evals.answer_set import (
    AnswerSet,
    Outcome,
    in_turns,
    load_set,
    outcome_dict,
    run_set,
    summary,
)

SCRIPTED = "scripted"


def reference_model(answer_set: AnswerSet) -> ScriptedLLM:
    """A model that calls each question's reference tool, then answers with its result."""

    def play(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ) -> Turn:
        if messages and messages[-1].role == "tool":
            return turn(text(f"The tool returned: {messages[-1].content}"))
        asked = " ".join(m.content for m in messages if m.role == "user")
        for q in answer_set.questions:
            if q.question in asked and any(t.name == q.tool for t in tools):
                return turn(tool_call(q.tool, q.arguments))
        return turn(text("I don't know."))

    return ScriptedLLM(play, name=SCRIPTED)


def _load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


async def evaluate_model(
    name: str,
    answer_set: AnswerSet,
    *,
    overrides: dict[str, Any] | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """One model's summary row (with ``outcomes``); an ``error`` row if it cannot load."""
    started_load = datetime.now(UTC).isoformat(timespec="seconds")
    load_before = _load_average()
    local: LocalLLM | None = None
    llm: LLM
    if name == SCRIPTED:
        llm = reference_model(answer_set)
    else:
        s = settings()
        observed = make_llm(s.agents.model_copy(update={"llm": "local", "llm_local_model": name}))
        assert isinstance(observed, ObservedLLM) and isinstance(observed.inner, LocalLLM)
        local, llm = observed.inner, observed
        try:
            await local.load()  # a missing package is said here, with its install command
        except LLMError as e:
            return {"model": name, "error": e.code, "message": e.message, "hint": e.hint}

    def show(o: Outcome) -> None:
        if progress:
            mark = ("ok " if o.correct else "bad") + (" tool" if o.tool_ok else " TOOL")
            typer.echo(f"  {o.id} {mark} {o.seconds:6.1f}s {o.tools}", err=True)

    wall = time.perf_counter()
    try:
        outcomes = await run_set(llm, answer_set, overrides=overrides, on_outcome=show)
    finally:
        if local is not None:
            await local.aclose()
    row = summary(name if local is None else local.name, outcomes)
    row |= {
        "asked_of": len(answer_set.questions),  # more than "questions": stopped early
        "load_s": None if local is None else round(local.load_seconds or 0.0, 1),
        "wall_s": round(time.perf_counter() - wall, 1),
        "started": started_load,
        "loadavg_before": load_before,
        "loadavg_after": _load_average(),
        "host": f"{platform.machine()} {os.cpu_count()} cpu",
        "threads": None if local is None else local.threads,
        "outcomes": [outcome_dict(o) for o in outcomes],
    }
    return row


@run_async
async def eval_answers(
    model: Annotated[
        list[str] | None,
        typer.Option(
            help=f"A model to evaluate (repeatable): {', '.join(LOCAL_MODELS)} or {SCRIPTED}. "
            "Default: every local model."
        ),
    ] = None,
    questions: Annotated[
        Path | None, typer.Option(help="Another question file (default: the shipped set).")
    ] = None,
    limit: Annotated[
        int, typer.Option(min=0, help="Ask only the first N questions, kinds in turn (0: all).")
    ] = 0,
    per_kind: Annotated[
        int, typer.Option(min=0, help="Ask only the first N questions of each kind (0: all).")
    ] = 0,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON line per model (with each outcome).")
    ] = False,
) -> None:
    """Share answered correctly and tool-choice accuracy of each local model on the shipped
    tool-needing questions (arithmetic, dates, documents), asked through the whole system."""
    answer_set = load_set(questions)
    answer_set = in_turns(answer_set, per_kind)
    if limit:
        answer_set = answer_set.model_copy(update={"questions": answer_set.questions[:limit]})
    names = model or list(LOCAL_MODELS)
    unknown = [n for n in names if n not in LOCAL_MODELS and n != SCRIPTED]
    if unknown:
        raise typer.BadParameter(f"unknown model {unknown[0]!r}; choose from {list(LOCAL_MODELS)}")
    failed = False
    for name in names:
        if not as_json:
            typer.echo(f"{name}: {len(answer_set.questions)} questions", err=True)
        row = await evaluate_model(name, answer_set, progress=True)
        failed |= "error" in row
        if as_json:
            typer.echo(json.dumps(row))
        elif "error" in row:
            typer.echo(f"{name}: {row['error']}: {row['message']} ({row['hint']})")
        else:
            typer.echo(
                f"{row['model']}: correct {row['correct']:.0%}, tool choice "
                f"{row['tool_choice']:.0%}, mean {row['mean_s']} s/question, "
                f"load {row['loadavg_before']} -> {row['loadavg_after']}"
            )
    if failed:
        raise typer.Exit(1)
