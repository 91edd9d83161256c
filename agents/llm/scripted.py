"""A deterministic model for tests and benchmarks: it replays scripted turns.

A turn is a list of events. Build them with the helpers::

    llm = ScriptedLLM([
        turn(tool_call("calculator", {"expression": "23 * 19"})),
        turn(reasoning("The tool said 437."), text("23 × 19 = 437.")),
    ])

or pass a function ``(messages, tools, options) -> turn`` for tests that branch on input.
With no script it plays the benchmark turn (see :func:`benchmark_turn`).
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import Any

from agents.errors import ScriptExhausted
from agents.llm.ports import (
    ChatMessage,
    LLMEvent,
    LLMOptions,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolDefinition,
    Usage,
    check_request,
)
from agents.llm.scripted_json import example_of

Turn = Sequence[LLMEvent]
"""The events one ``stream`` call yields, in order."""

TurnFunction = Callable[[Sequence[ChatMessage], Sequence[ToolDefinition], LLMOptions], Turn]
"""Chooses the turn from the request, for scripts that branch on input."""

_TOKEN = re.compile(r"\s*\S+|\s+")
_ASKED_CALL = re.compile(r"\bcall (?P<name>[A-Za-z0-9_-]+) with (?P<args>\{.*\})", re.DOTALL)

BENCHMARK_ANSWER = (
    "The calculator evaluated 23 * 19 and returned 437, so twenty-three times nineteen is "
    "437. To check by hand: 20 * 19 is 380 and 3 * 19 is 57, and 380 plus 57 makes 437. "
    "The answer is 437."
)
"""The benchmark's final answer: 40 whitespace-separated tokens that contain ``437``."""


def tokens(content: str) -> list[str]:
    """Split text into word-sized tokens that concatenate back to ``content``."""
    return _TOKEN.findall(content)


def text(content: str) -> list[TextDelta]:
    """Answer text, one delta per word-sized token."""
    return [TextDelta(text=t) for t in tokens(content)]


def reasoning(content: str) -> list[ReasoningDelta]:
    """Reasoning text, one delta per word-sized token."""
    return [ReasoningDelta(text=t) for t in tokens(content)]


def tool_call(
    name: str, arguments: dict[str, Any] | None = None, id: str | None = None
) -> ToolCall:
    """A complete tool call; without ``id`` a unique one is made, as real models do."""
    return ToolCall(id=id or f"call_{uuid.uuid4().hex[:12]}", name=name, arguments=arguments or {})


def usage(prompt_tokens: int, completion_tokens: int) -> Usage:
    """An explicit usage event (``turn`` adds one when a turn has none)."""
    return Usage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)


def turn(*parts: LLMEvent | Iterable[LLMEvent]) -> list[LLMEvent]:
    """Flatten events and lists of events into one turn that ends with a Usage.

    Without an explicit :func:`usage`, completion tokens count the deltas and tool calls.
    """
    events: list[LLMEvent] = []
    for part in parts:
        if isinstance(part, ReasoningDelta | TextDelta | ToolCall | Usage):
            events.append(part)
        else:
            events.extend(part)
    if not any(isinstance(e, Usage) for e in events):
        events.append(usage(0, len(events)))
    return events


def benchmark_turn(
    messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
) -> Turn:
    """The benchmark: a ``calculator`` call for 23 * 19, then a 40-token answer with 437
    (a question naming "docs" calls ``search_docs`` with the question instead, if offered;
    one that says ``call TOOL with {JSON}`` calls that tool with those arguments, if offered).

    The turn is chosen from the conversation (after a tool result: answer; otherwise: call
    the calculator if offered) rather than from a cursor, so concurrent runs sharing one
    model each get their own call-then-answer sequence. An answer asked for under a
    ``response_schema`` is a JSON document shaped by it (`agents.llm.scripted_json`).
    """
    role = agent_of(messages, options)
    if role == "summarizer":
        return turn(text(summary_of(messages[-1].content)), usage(200, 60))
    if role in ("planner", "critic", "verifier", "recompute", "claims"):
        return list(_fixed_turn(role))
    if messages[-1].role == "tool":
        return _answer(options)
    question = next((m.content for m in reversed(messages) if m.role == "user"), "")
    asked = _ASKED_CALL.search(question)
    if asked and any(t.name == asked["name"] for t in tools):
        return turn(tool_call(asked["name"], json.loads(asked["args"])), usage(50, 12))
    if "docs" in question.lower() and any(t.name == "search_docs" for t in tools):
        return turn(tool_call("search_docs", {"query": question}), usage(50, 12))
    if not any(t.name == "calculator" for t in tools):
        return _answer(options)
    return turn(tool_call("calculator", {"expression": "23 * 19"}), usage(50, 12))


def _answer(options: LLMOptions) -> Turn:
    if options.response_schema is None:
        return list(_fixed_turn("answer"))
    document = example_of(options.response_schema, BENCHMARK_ANSWER)
    return turn(text(json.dumps(document, ensure_ascii=False)), usage(60, 40))


@functools.cache
def _fixed_turn(name: str) -> tuple[LLMEvent, ...]:
    # Built once: a model with zero latency should cost the benchmark nothing either
    # (the events are frozen, so every run can share them).
    match name:
        case "planner":
            return tuple(turn(text(BENCHMARK_PLAN), usage(40, 8)))
        case "critic":
            return tuple(turn(text(BENCHMARK_CRITIQUE), usage(120, 7)))
        case "verifier":
            return tuple(turn(text('{"verdict": "pass", "reasons": ["matches the tool result"]}')))
        case "recompute":
            return tuple(turn(text(BENCHMARK_RECOMPUTE)))
        case "claims":
            return tuple(turn(text(BENCHMARK_CLAIMS), usage(150, 30)))
        case _:
            return tuple(turn(text(BENCHMARK_ANSWER), usage(60, 40)))


BENCHMARK_PLAN = "- Multiply 23 by 19 with the calculator."
"""The planner's benchmark turn: 8 tokens."""

BENCHMARK_CRITIQUE = '{"verdict": "OK", "reason": "the tool result supports the answer"}'
"""The critic's benchmark turn: a structured OK (`agents.checks.verdicts.CRITIC_SCHEMA`)."""

BENCHMARK_CLAIMS = (
    '{"claims": [{"draft_claim": "437", "evidence": "437", "standing": "supported"}]}'
)
"""The judge's benchmark claim check (`agents.understanding.claims.model.SCHEMA`): one
supported claim."""

BENCHMARK_RECOMPUTE = '{"checks": [{"claim": "437", "expression": "23 * 19"}]}'
"""The fact-check's benchmark recompute plan (`agents.checks.recompute.PLAN_SCHEMA`)."""


SUMMARY_WORDS = 60
"""The benchmark summary's length in words at most (a real summarizer's is capped too)."""

_SAID = re.compile(r"^User: (?P<said>.*)$", re.MULTILINE)


def summary_of(request: str) -> str:
    """The benchmark's summary of a summarizer request: the summary so far and the new
    questions, in order, cut to `SUMMARY_WORDS` words (the oldest kept)."""
    before, _, new = request.partition("\nNew messages:\n")
    old = before.removeprefix("Summary so far:\n").strip()
    words = ([] if old == "(none)" else old.split()) + [
        w for m in _SAID.finditer(new) for w in m["said"].split()
    ]
    return " ".join(words[:SUMMARY_WORDS]) or "Nothing yet."


def agent_of(messages: Sequence[ChatMessage], options: LLMOptions) -> str:
    """Which role a request comes from: planner, critic, verifier, recompute, claims (the
    judge's claim check), summarizer or researcher.

    The multi-agent roles' default prompts say who they are in their first words, the
    summarizer's too; the fact-check's recompute plan and the verifier are told apart by
    their schemas.
    """
    first = messages[0].content if messages and messages[0].role == "system" else ""
    if first.startswith("You keep a running summary"):
        return "summarizer"
    for role in ("planner", "critic", "verifier"):
        if first.startswith(f"You are the {role}"):
            return role
    schema = str(options.response_schema or "")
    if "checks" in schema:
        return "recompute"
    if "standing" in schema:
        return "claims"
    if "verdict" in schema:
        return "verifier"
    return "researcher"


class ScriptedLLM:
    """Replays turns from a list (one per call) or from a function of the request.

    Args:
        script: a list of turns played in order, or a :data:`TurnFunction`; default
            :func:`benchmark_turn`.
        token_delay: seconds to sleep before each text or reasoning delta (0 = none).
        latency: seconds to sleep before each call's first event, as a real model's time
            to first token (0 = none).
        record: keep every request in :attr:`requests` (off for a long-lived process: the
            list would grow with every call).
        cycle: replay the list from the start once it is used up, instead of raising.
        name: the label reported by :attr:`name`.
    """

    def __init__(
        self,
        script: Sequence[Turn] | TurnFunction | None = None,
        *,
        token_delay: float = 0.0,
        latency: float = 0.0,
        cycle: bool = False,
        name: str = "scripted",
        record: bool = True,
    ) -> None:
        self._script: Sequence[Turn] | TurnFunction = (
            script if script is not None else benchmark_turn
        )
        self._token_delay = token_delay
        self._latency = latency
        self._record = record
        self._cycle = cycle
        self._name = name
        self._cursor = 0
        self.requests: list[
            tuple[tuple[ChatMessage, ...], tuple[ToolDefinition, ...], LLMOptions]
        ] = []
        """Every request received, in order, for tests to inspect."""

    @property
    def name(self) -> str:
        """The label given at construction."""
        return self._name

    def _next_turn(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ) -> Turn:
        if callable(self._script):
            return self._script(messages, tools, options)
        if self._cursor >= len(self._script):
            if not self._cycle or not self._script:
                raise ScriptExhausted(f"the script has {len(self._script)} turns; all were used")
            self._cursor = 0
        played = self._script[self._cursor]
        self._cursor += 1
        return played

    async def stream(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        options: LLMOptions | None = None,
    ) -> AsyncIterator[LLMEvent]:
        """Yield the next scripted turn after ``latency``, pausing ``token_delay`` before
        each delta."""
        check_request(messages, tools)
        options = options or LLMOptions()
        if self._record:
            self.requests.append((tuple(messages), tuple(tools), options))
        if self._latency > 0:
            await asyncio.sleep(self._latency)
        for event in self._next_turn(messages, tools, options):
            if self._token_delay > 0 and isinstance(event, TextDelta | ReasoningDelta):
                await asyncio.sleep(self._token_delay)
            yield event
