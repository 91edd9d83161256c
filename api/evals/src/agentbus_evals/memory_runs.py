"""``agentbus eval memory``: each extractor on the memory set, as the memory step runs it.

A statement reaches the extractor only when the cheap first pass
(`agents.understanding.memory.rules.worth_remembering`) lets it, as the finalizer does. A
correction's ``earlier`` statement is read first and its facts stored by topic; the
correction's facts then replace those on the same topic, as `bus.store.memories` does.

Extractors: ``rules``; ``scripted``, the reference, a model that answers each statement
with the set's own facts (its figures check the harness and the first pass, not a model);
and the local models, through the model extractor with the rules as its fallback. Each
model gives two rows from one call per statement: the model alone, and ``+rules``, the
model's facts with the rules' on topics it left out (`agents.understanding.memory.combined`).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import typer

from agentbus_evals.answer_runs import host_figures
from agentbus_evals.memory_set import (
    Half,
    MemoryCase,
    MemoryOutcome,
    MemorySet,
    Statements,
    judge,
    load_memory_set,
    summarize,
)
from agentbus_evals.system import load_local
from agents.errors import LLMError
from agents.llm.local import LocalLLM
from agents.llm.ports import ChatMessage, LLMOptions, ToolDefinition
from agents.llm.scripted import ScriptedLLM, Turn, text, turn
from agents.llm.weights import LOCAL_MODELS
from agents.understanding.memory.combined import ModelWithRules
from agents.understanding.memory.model import ModelMemory
from agents.understanding.memory.ports import MemoryExtractor, Statement
from agents.understanding.memory.rules import RulesMemory, worth_remembering

RULES = "rules"
SCRIPTED = "scripted"


def reference_model(memory_set: MemorySet) -> ScriptedLLM:
    """A model answering each statement with the set's own facts (none for a negative)."""

    def play(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ) -> Turn:
        said = messages[-1].content.removeprefix("Message: ")
        case = next((c for c in memory_set.statements if c.text == said), None)
        facts = [
            {
                "quote": said,
                "about": "user",
                "mode": "states",
                "topic": "other",
                "fact": "The user: " + ", ".join(t.split("|")[0] for t in f),
            }
            for f in (case.facts if case else [])
        ]
        return turn(text(json.dumps({"facts": facts})))

    return ScriptedLLM(play, name=SCRIPTED)


def chosen(
    memory_set: MemorySet, half: Half | None, statements: Statements = "all"
) -> list[MemoryCase]:
    """The statements of ``half`` (every half: None), languages in turn: all of them, only
    those to keep (``keep``) or only the negatives, which should keep nothing."""
    wanted = {"all": (True, False), "keep": (True,), "negatives": (False,)}[statements]
    return in_turn(
        [
            c
            for c in memory_set.statements
            if (half is None or c.half == half) and bool(c.facts) in wanted
        ]
    )


def in_turn(cases: Sequence[MemoryCase]) -> list[MemoryCase]:
    """The statements with the languages in turn, and in each language those to keep and
    the negatives in turn, so a run stopped early (or limited) has some of each."""
    by_lang: dict[str, list[MemoryCase]] = {}
    for case in cases:
        by_lang.setdefault(case.lang, []).append(case)
    rounds = itertools.zip_longest(*(_alternate(own) for own in by_lang.values()))
    return [case for round_ in rounds for case in round_ if case is not None]


def _alternate(cases: Sequence[MemoryCase]) -> list[MemoryCase]:
    keep = [c for c in cases if c.facts]
    negatives = [c for c in cases if not c.facts]
    pairs = itertools.zip_longest(keep, negatives)
    return [case for pair in pairs for case in pair if case is not None]


async def _read(extractor: MemoryExtractor, said: str) -> list[Statement]:
    return await extractor.extract(said) if worth_remembering(said) else []


async def run_case(extractor: MemoryExtractor, case: MemoryCase) -> MemoryOutcome:
    """One statement through the first pass and the extractor, judged."""
    memory: dict[str, Statement] = {}
    if case.earlier:
        memory |= {s.topic: s for s in await _read(extractor, case.earlier)}
    started = time.perf_counter()
    stored = await _read(extractor, case.text)
    seconds = time.perf_counter() - started
    memory |= {s.topic: s for s in stored}
    return judge(case, stored, list(memory.values()), seconds)


class Remembered:
    """An extractor asked once per statement: the ``+rules`` row reuses the model's reply."""

    def __init__(self, inner: MemoryExtractor) -> None:
        self._inner = inner
        self._read: dict[str, list[Statement]] = {}

    @property
    def name(self) -> str:
        """The wrapped extractor's id."""
        return self._inner.name

    async def extract(self, question: str) -> list[Statement]:
        """The wrapped extractor's facts, read once per question."""
        if question not in self._read:
            self._read[question] = await self._inner.extract(question)
        return self._read[question]


def _extractors(name: str, llm: Any) -> dict[str, MemoryExtractor]:
    """The rows an extractor name gives, by row name (a model: alone and ``+rules``)."""
    if name == RULES:
        return {RULES: RulesMemory()}
    model = Remembered(ModelMemory(llm, RulesMemory()))
    if name == SCRIPTED:
        return {SCRIPTED: model}
    return {name: model, f"{name}+rules": ModelWithRules(model, RulesMemory())}


async def evaluate_memory(
    name: str,
    memory_set: MemorySet,
    half: Half | None,
    *,
    statements: Statements = "all",
    progress: bool = False,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """One extractor's summary rows (with each outcome); an ``error`` row if it cannot load."""
    started = datetime.now(UTC).isoformat(timespec="seconds")
    before = host_figures()
    local: LocalLLM | None = None
    llm: Any = None
    if name == SCRIPTED:
        llm = reference_model(memory_set)
    elif name != RULES:
        try:
            local, llm = await load_local(name)
        except LLMError as e:
            return [{"extractor": name, "error": e.code, "message": e.message, "hint": e.hint}]
    extractors = _extractors(name, llm)
    cases = chosen(memory_set, half, statements)[:limit]
    outcomes: dict[str, list[MemoryOutcome]] = {row: [] for row in extractors}
    wall = time.perf_counter()
    try:
        for case in cases:
            for row, extractor in extractors.items():
                outcome = await run_case(extractor, case)
                if row != name:  # the model's seconds are the model row's
                    outcome = dataclasses.replace(outcome, seconds=outcomes[name][-1].seconds)
                outcomes[row].append(outcome)
                if progress:
                    mark = {True: "ok ", False: "BAD", None: "neg"}[outcome.kept_right]
                    typer.echo(
                        f"  {row} {case.id} {case.kind:12} {mark} {outcome.stored}", err=True
                    )
    finally:
        if local is not None:
            await local.aclose()
    after = host_figures()["loadavg"]
    rows: list[dict[str, Any]] = []
    for row, found in outcomes.items():
        summary = summarize(row, found)
        rows.append(
            dataclasses.asdict(summary)
            | {
                "line": summary.line(),
                "half": half or "all",
                "statements": statements,
                "limit": limit,
                "wall_s": round(time.perf_counter() - wall, 1),
                "started": started,
                "loadavg_before": before["loadavg"],
                "loadavg_after": after,
                "host": before["host"],
                "threads": None if local is None else local.threads,
                "outcomes": [dataclasses.asdict(o) for o in found],
            }
        )
    return rows


async def eval_memory(
    extractors: list[str] | None,
    half: Half | None,
    *,
    as_json: bool,
    progress: bool,
    statements: Statements = "all",
    limit: int | None = None,
) -> None:
    """Print each extractor's figures on the chosen half (its first ``limit`` statements)."""
    names = extractors or [RULES, SCRIPTED, *LOCAL_MODELS]
    known = {RULES, SCRIPTED, *LOCAL_MODELS}
    if unknown := [n for n in names if n not in known]:
        raise typer.BadParameter(f"unknown extractor {unknown[0]!r}; choose from {sorted(known)}")
    memory_set = load_memory_set()
    for name in names:
        for row in await evaluate_memory(
            name, memory_set, half, statements=statements, progress=progress, limit=limit
        ):
            _print(row, name, statements, as_json=as_json)


def _print(row: dict[str, Any], name: str, statements: Statements, *, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(row, ensure_ascii=False))
    elif "error" in row:
        typer.echo(f"{name:22} error [{row['error']}]: {row['message']} ({row['hint']})")
    else:
        load = f"load {row['loadavg_before']} -> {row['loadavg_after']}"
        where = f"{row['half']}, {statements} statements"
        typer.echo(f"{row['line']}  [{where}, {row['wall_s']} s, {load}]")
