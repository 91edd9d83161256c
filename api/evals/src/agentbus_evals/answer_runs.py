"""``agentbus eval answers``: the shipped tool-needing questions, asked of each local model.

Each model answers the whole set through the system (`agentbus_evals.answer_set`), in single or
multi mode (``--mode``, ``--accuracy``), on the shipped set or the harder one (``--set
hard``); the report gives, per model and mode, the share answered correctly, the
tool-choice accuracy, the mean seconds per question, the answers about the documents that
cite a passage and, in multi mode, the judges' catch rate, false alarms and wrong answers
that ended verified. ``scripted`` is the reference model: it makes each question's
reference tool calls and answers with the last tool's result in words (citing the first passage of
a search) or the question's reference answer, and in multi mode plans, recomputes with the
question's own calculator call and approves, so it checks the questions and the harness.
"""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, cast

import typer

from agentbus_evals.answer_set import (
    DEADLINE_S,
    NO_TOOL,
    SETS,
    AnswerSet,
    Call,
    Half,
    Outcome,
    Question,
    in_half,
    in_turns,
    load_set,
    outcome_dict,
    run_set,
    summary,
)
from agentbus_evals.system import load_local
from agents.errors import LLMError
from agents.llm.local import LocalLLM
from agents.llm.ports import LLM, ChatMessage, LLMOptions, ToolDefinition
from agents.llm.scripted import ScriptedLLM, Turn, agent_of, text, tool_call, turn
from agents.llm.weights import LOCAL_MODELS
from retrieval.citations import SEARCH_TOOL

SCRIPTED = "scripted"


def reference_model(answer_set: AnswerSet) -> ScriptedLLM:
    """A model that makes each question's reference calls, then answers with the last result
    (or the question's reference answer); as a judge it recomputes with the question's own
    calculator call and approves."""

    def play(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ) -> Turn:
        asked = " ".join(m.content for m in messages if m.role == "user")
        q = next((q for q in answer_set.questions if q.question in asked), None)
        role = agent_of(messages, options)
        if role != "researcher":
            return _judge_turn(role, q)
        if q is None:
            return turn(text("I don't know."))
        calls = [Call(tool=q.tool, arguments=q.arguments), *q.then] if q.tool != NO_TOOL else []
        done = sum(1 for m in messages if m.role == "tool")
        if done < len(calls) and any(t.name == calls[done].tool for t in tools):
            return turn(tool_call(calls[done].tool, calls[done].arguments))
        if q.reference is not None:
            return turn(text(q.reference))
        if messages[-1].role == "tool":
            # Found in the documents: cite the first passage, as a model should.
            cite = " [1]" if messages[-1].name == SEARCH_TOOL else ""
            return turn(text(f"The tool returned: {in_words(messages[-1].content)}{cite}"))
        return turn(text("I don't know."))

    return ScriptedLLM(play, name=SCRIPTED)


def in_words(tool_message: str) -> str:
    """A tool's result as a model should write it: the values it holds, never its JSON
    (a draft holding the gateway's payload is not an answer: `agents.checks.answer_guard`)."""
    body: dict[str, Any] = json.loads(tool_message)
    result: Any = body.get("result", body)
    if isinstance(result, dict) and {"expression", "result"} <= result.keys():
        return f"{result['expression']} = {result['result']}"
    return "; ".join(_leaves(result))


def _leaves(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [leaf for v in cast("dict[str, Any]", value).values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in cast("list[Any]", value) for leaf in _leaves(v)]
    return [str(value)]


def _judge_turn(role: str, q: Question | None) -> Turn:
    if role == "planner":
        return turn(text('{"plan": ["Use the tools the question needs, then answer."]}'))
    if role == "critic":
        return turn(text('{"verdict": "OK", "reason": "supported by the tool result"}'))
    if role == "verifier":
        return turn(text('{"verdict": "pass", "reasons": ["supported by the tool result"]}'))
    calls = [Call(tool=q.tool, arguments=q.arguments), *q.then] if q else []
    checks = [
        {"claim": "", "expression": c.arguments["expression"]}
        for c in calls
        if c.tool == "calculator"
    ]
    return turn(text(json.dumps({"checks": checks[-1:]})))


def _load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def host_figures() -> dict[str, str]:
    """The host's load average now and what it is (the evals print both)."""
    return {"loadavg": _load_average(), "host": f"{platform.machine()} {os.cpu_count()} cpu"}


async def evaluate_model(
    name: str,
    answer_set: AnswerSet,
    *,
    overrides: dict[str, Any] | None = None,
    progress: bool = False,
    mode: Literal["single", "multi"] = "single",
    accuracy: Literal["standard", "accurate"] = "standard",
    context: bool = True,
    deadline_s: float = DEADLINE_S,
) -> dict[str, Any]:
    """One model's summary row (with ``outcomes``); an ``error`` row if it cannot load."""
    started_load = datetime.now(UTC).isoformat(timespec="seconds")
    load_before = _load_average()
    local: LocalLLM | None = None
    llm: LLM
    if name == SCRIPTED:
        llm = reference_model(answer_set)
    else:
        try:
            local, llm = await load_local(name)
        except LLMError as e:
            return {"model": name, "error": e.code, "message": e.message, "hint": e.hint}

    def show(o: Outcome) -> None:
        if progress:
            mark = ("ok " if o.correct else "bad") + (" tool" if o.tool_ok else " TOOL")
            mark += " [n]" if o.cited else ""
            judged = " ".join(",".join(d.verdicts) for d in o.drafts)
            verified = "" if mode == "single" else f" verified={o.verified} {judged}"
            typer.echo(f"  {o.id} {mark} {o.seconds:6.1f}s {o.tools}{verified}", err=True)

    wall = time.perf_counter()
    try:
        outcomes = await run_set(
            llm,
            answer_set,
            overrides=overrides,
            on_outcome=show,
            mode=mode,
            accuracy=accuracy,
            context=context,
            deadline_s=deadline_s,
        )
    finally:
        if local is not None:
            await local.aclose()
    row = summary(name if local is None else local.name, outcomes)
    row |= {
        "mode": mode if mode == "single" else f"{mode} {accuracy}",
        "context": context,
        "deadline_s": deadline_s,
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


def report_line(row: dict[str, Any]) -> str:
    """One model and mode's figures, as the command prints them."""
    line = (
        f"{row['model']} [{row['mode']}]: correct {row['correct']:.0%}, tool choice "
        f"{row['tool_choice']:.0%}, mean {row['mean_s']} s/question"
    )
    if "cited" in row:
        line += f", document answers citing a passage {row['cited']}"
    if "drafts_judged" in row:
        line += (
            f", judges caught {row['caught']} wrong drafts, false alarms {row['false_alarms']},"
            f" unknown {row['unknown']}, wrong answers verified {row['wrong_verified']}"
            f" ({row['wrong_verified_recomputable']} a tool could recompute), verified yes"
            f" {row['verified_yes']} (right {row['verified_yes_right']}/{row['verified_yes']})"
        )
    return line + f", load {row['loadavg_before']} -> {row['loadavg_after']}"


async def eval_answers(
    *,
    model: list[str] | None,
    questions: Path | None,
    question_set: str,
    mode: str,
    accuracy: str,
    limit: int,
    per_kind: int,
    context: bool,
    as_json: bool,
    deadline_s: float = DEADLINE_S,
    half: Half | None = None,
) -> None:
    """``agentbus eval answers``: check the choices, evaluate each model, print its row.

    Raises:
        typer.BadParameter: an unknown set, mode, accuracy or model.
        typer.Exit: (1) a model could not be evaluated.
    """
    if question_set not in SETS:
        raise typer.BadParameter(f"unknown set {question_set!r}; choose from {list(SETS)}")
    if mode not in ("single", "multi") or accuracy not in ("standard", "accurate"):
        raise typer.BadParameter("--mode is single or multi; --accuracy standard or accurate")
    answer_set = in_half(load_set(questions, question_set), half)
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
        row = await evaluate_model(
            name,
            answer_set,
            progress=True,
            mode=mode,  # type: ignore[arg-type]  # checked above
            accuracy=accuracy,  # type: ignore[arg-type]
            context=context,
            deadline_s=deadline_s,
        )
        row["set"] = question_set if questions is None else str(questions)
        failed |= "error" in row
        if as_json:
            typer.echo(json.dumps(row))
        elif "error" in row:
            typer.echo(f"{name}: {row['error']}: {row['message']} ({row['hint']})")
        else:
            typer.echo(report_line(row))
    if failed:
        raise typer.Exit(1)
