"""Long-conversation benchmark (``agentbus bench conversation``): one conversation of many
turns through the whole system, and what each turn's model call was given.

Every turn is a real run (intake, researcher, finalizer) on an embedded temporary system,
asked after the one before it ended. A wrapper around the model records each call: which
kind (the researcher's answer, the contextualizer's rewrite, the summarizer's fold), its
messages' size in characters and estimated tokens (`agents.context_budget`), and the prompt
tokens the model reported (the local model counts them with its own tokenizer; a call that
first chose a tool reports both prompts). Turn 3 states a fact; the last turn asks for it.
Figures are printed per bucket of turns, so a history that grew would show as a trend.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redis.asyncio import Redis

from agentbus_bench.local import load_average
from agents import context_budget, prompts
from agents.llm.ports import LLM, ChatMessage, LLMEvent, LLMOptions, ToolDefinition, Usage
from api.compose.connection import connect
from api.compose.roles import RUN_ROLES, Roles, make_llm
from api.compose.settings import AppSettings
from api.compose.workers import build_workers
from bus import keys
from bus.commands import AgentTask, Command, RunSettings, RunState, deadline_in, new_run_id
from bus.publish import publish, read_events
from bus.runtime.runner import Runner
from bus.store import Scope, Stores, open_store
from bus.transcript import fold

TENANT, SUBJECT, CONVERSATION = "bench", "bench", "bench-conversation"
FACT = "Please remember this: my locker code is 4812."
FACT_QUESTION = "What is my locker code?"
FACT_ANSWER = "4812"
FILLER = (
    "Name a fruit that is red. Answer in one short sentence.",
    "What colour is the sky on a clear day? One sentence.",
    "Give me one word that rhymes with cat.",
    "Suggest a name for a small grey cat. One line.",
    "What is a good breakfast before a long walk? One sentence.",
    "Name a river in Europe. One sentence.",
    "What do bees make? One short sentence.",
    "Give me a synonym of quick.",
)


def question(turn: int, turns: int) -> str:
    """The question of ``turn`` (1-based): a greeting, the fact at 3, fillers, the fact's
    question last."""
    if turn == turns:
        return FACT_QUESTION
    if turn == 3:
        return FACT
    if turn == 1:
        return "Hello! I have a few small questions for you today."
    return FILLER[turn % len(FILLER)]


@dataclass
class Call:
    """One model call: its kind, when, how big its input was, what it reported."""

    kind: str
    chars: int
    estimated_tokens: int
    prompt_tokens: int = 0
    seconds: float = 0.0


def kind_of(messages: Sequence[ChatMessage]) -> str:
    """``summarizer``, ``contextualize`` or ``researcher``, from the system prompt."""
    first = messages[0].content if messages else ""
    if first.startswith(prompts.SUMMARIZE):
        return "summarizer"
    if first.startswith(prompts.CONTEXTUALIZE):
        return "contextualize"
    return "researcher"


@dataclass
class Recording:
    """An `LLM` that records each call of the one it wraps (`Call`)."""

    inner: LLM
    calls: list[Call] = field(default_factory=lambda: [])

    @property
    def name(self) -> str:
        """The wrapped model's name."""
        return self.inner.name

    async def stream(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        options: LLMOptions | None = None,
    ) -> AsyncIterator[LLMEvent]:
        """The wrapped model's events; the call is recorded when its `Usage` arrives."""
        call = Call(
            kind=kind_of(messages),
            chars=sum(len(m.content) for m in messages),
            estimated_tokens=sum(context_budget.estimate_tokens(m.content) for m in messages),
        )
        started = time.perf_counter()
        async for event in self.inner.stream(messages, tools, options):
            if isinstance(event, Usage):
                call.prompt_tokens = event.prompt_tokens
                call.seconds = time.perf_counter() - started
                self.calls.append(call)
            yield event


@dataclass
class Turn:
    """One turn's figures."""

    turn: int
    seconds: float
    status: str
    answer: str
    calls: list[Call]

    def researcher(self) -> Call | None:
        """The turn's (last) researcher call: what the answering model was given."""
        return next((c for c in reversed(self.calls) if c.kind == "researcher"), None)


@contextlib.asynccontextmanager
async def system(llm: LLM, settings: AppSettings) -> AsyncGenerator[tuple[Redis, Stores]]:
    """Every role on an embedded Redis and a SQLite store in ``settings.data_dir``."""
    async with (
        open_store(settings.bus, migrate=True) as stores,
        connect(settings.bus, embedded=True) as conn,
    ):
        roles = Roles(settings, stores, llm=llm)
        workers = build_workers(RUN_ROLES, conn.redis, settings.bus, roles, concurrency=2)
        for w in workers:
            await w.ensure_groups()
        runner = Runner(workers, conn.redis)
        task = asyncio.create_task(runner.run())
        try:
            yield conn.redis, stores
        finally:
            runner.stop()
            await asyncio.wait_for(task, 60)


async def ask(redis: Redis, settings: AppSettings, text: str) -> tuple[str, str]:
    """One turn of the conversation, to its end: (status, answer)."""
    command = Command(
        run_id=new_run_id(),
        tenant_id=TENANT,
        subject=SUBJECT,
        role=keys.Role.INTAKE,
        deadline=deadline_in(900),
        payload=AgentTask(
            state=RunState(
                question=text,
                conversation_id=CONVERSATION,
                settings=RunSettings(mode="single", use_tools=False, think=False),
            )
        ),
    )
    await publish(redis, command, settings.bus)
    async with asyncio.timeout(930):
        events = [e async for _, e in read_events(redis, command.run_id, command.shard)]
    transcript = fold(events)
    return transcript.status or "unknown", transcript.answer


def _bucket(turns: Sequence[Turn], first: int, last: int) -> dict[str, Any]:
    chosen = [t for t in turns if first <= t.turn <= last]
    calls = [c for t in chosen for c in t.calls]
    research = [c for t in chosen if (c := t.researcher()) is not None]
    return {
        "turns": f"{first}-{last}",
        "ms_per_turn": round(1000 * statistics.mean(t.seconds for t in chosen), 1),
        "researcher_chars": round(statistics.mean(c.chars for c in research)) if research else 0,
        "researcher_est_tokens_max": max((c.estimated_tokens for c in research), default=0),
        "researcher_prompt_tokens_max": max((c.prompt_tokens for c in research), default=0),
        "summaries_written": sum(1 for c in calls if c.kind == "summarizer"),
        "not_done": sum(1 for t in chosen if t.status != "done"),
    }


async def drive(llm: Recording, settings: AppSettings, turns: int, every: int) -> dict[str, Any]:
    """The conversation, turn by turn; its figures."""
    done: list[Turn] = []
    async with system(llm, settings) as (redis, stores):
        for n in range(1, turns + 1):
            before = len(llm.calls)
            started = time.perf_counter()
            status, answer = await ask(redis, settings, question(n, turns))
            done.append(Turn(n, time.perf_counter() - started, status, answer, llm.calls[before:]))
            if n % every == 0 or n == turns:
                print(
                    f"  turn {n}: {done[-1].seconds:.2f}s load {load_average()}",
                    file=sys.stderr,
                    flush=True,
                )
        assert stores.summaries is not None
        summaries = await stores.summaries.list(Scope.user(TENANT, SUBJECT), CONVERSATION)
    last = done[-1]
    research = last.researcher()
    newest = summaries[-1] if summaries else None
    return {
        "buckets": [
            _bucket(done, first, min(first + every - 1, turns))
            for first in range(1, turns + 1, every)
        ],
        "last_turn": {
            "seconds": round(last.seconds, 2),
            "researcher_chars": research.chars if research else 0,
            "researcher_est_tokens": research.estimated_tokens if research else 0,
            "researcher_prompt_tokens": research.prompt_tokens if research else 0,
            "answer": last.answer[:300],
            "fact_recalled": FACT_ANSWER in last.answer,
        },
        "summaries": len(summaries),
        "newest_summary": {
            "through_message_id": newest.through_message_id,
            "messages": newest.messages,
            "chars": len(newest.content),
            "holds_fact": FACT_ANSWER in newest.content,
            "content": newest.content[:600],
        }
        if newest
        else None,
    }


def main(*, model: str, turns: int, window: int | None, every: int, as_json: bool) -> None:
    """Entry point for ``agentbus bench conversation``."""
    with tempfile.TemporaryDirectory(prefix="agentbus-bench-conversation-") as tmp:
        overrides: dict[str, Any] = {
            "data_dir": Path(tmp),
            "redis_url": None,
            "redis_cluster": False,
            "database_url": None,
            "metrics_port": None,
            "llm": model,
        }
        if window is not None:
            key = "llm_context_tokens" if model == "local" else "llm_context_window"
            overrides[key] = window
        settings = AppSettings.load(**overrides)
        inner = make_llm(settings.agents)
        llm = Recording(inner)
        load_before = load_average()
        measured = asyncio.run(drive(llm, settings, turns, every))
    buckets: list[dict[str, Any]] = measured.pop("buckets")
    figures: dict[str, Any] = {
        "model": inner.name,
        "turns": turns,
        "window_tokens": settings.agents.context_window(),
        "loadavg_before": load_before,
        "loadavg_after": load_average(),
        "buckets": buckets,
        **measured,
    }
    if as_json:
        print(json.dumps(figures))
        return
    for key, value in figures.items():
        if key != "buckets":
            print(f"{key:>16}: {value}")
    for row in buckets:
        print("  " + "  ".join(f"{k}={v}" for k, v in row.items()))
