"""The contract every LLM adapter passes.

Subclass :class:`LLMContract` in a test module and provide an ``llm`` fixture. Backends that
can be steered (the scripted model, the fake OpenAI-compatible server) answer with
:func:`canonical_turn`, and ``exact = True`` checks the adapter delivers that turn unchanged.
A real model sets ``exact = False``: the same tests then check shapes, not wording.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any, ClassVar

import jsonschema
import pytest

from agents.errors import LLMBadRequest
from agents.llm.ports import (
    LLM,
    ChatMessage,
    LLMEvent,
    LLMOptions,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolDefinition,
    Usage,
)
from agents.llm.scripted import reasoning, text, tool_call, turn, usage

CALCULATOR = ToolDefinition(
    name="calculator",
    description="Evaluate an arithmetic expression such as 2 * (3 + 4).",
    parameters={
        "type": "object",
        "properties": {"expression": {"type": "string"}},
        "required": ["expression"],
        "additionalProperties": False,
    },
)
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}},
    "required": ["answer"],
    "additionalProperties": False,
}
QUESTION = "What is 23 × 19?"
GREETING_ANSWER = "Hello! Grüße, ¡hola!, 你好 — how can I help? ✓"
TOOL_ANSWER = "23 × 19 = 437."
REASONING = "The calculator is exact, so I will use it for 23 × 19."
CALL = tool_call("calculator", {"expression": "23 * 19"}, id="call_contract_1")


def canonical_turn(
    messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
) -> list[LLMEvent]:
    """What a steerable backend answers, so exact round-trip checks are possible."""
    last = messages[-1]
    events: list[LLMEvent] = list(reasoning(REASONING)) if options.think else []
    if options.response_schema is not None:
        events += [TextDelta(text='{"answer": '), TextDelta(text="437}")]
    elif last.role == "tool":
        events += text(TOOL_ANSWER)
    elif tools and "×" in last.content:
        events.append(CALL)
    else:
        events += text(GREETING_ANSWER)
    if options.max_tokens is not None:
        events = _truncate(events, options.max_tokens)
    prompt = sum(len(m.content) for m in messages) // 4 + 1
    return turn(events, usage(prompt, len(events)))


def _truncate(events: list[LLMEvent], limit: int) -> list[LLMEvent]:
    kept: list[LLMEvent] = []
    for event in events:
        if isinstance(event, TextDelta | ReasoningDelta):
            if limit == 0:
                break
            limit -= 1
        kept.append(event)
    return kept


async def run(
    llm: LLM,
    messages: Sequence[ChatMessage],
    tools: Sequence[ToolDefinition] = (),
    options: LLMOptions | None = None,
) -> list[LLMEvent]:
    """All events of one stream call."""
    return [event async for event in llm.stream(messages, tools, options)]


def joined(events: Sequence[LLMEvent], kind: type[TextDelta] | type[ReasoningDelta]) -> str:
    """The concatenated text of one kind of delta."""
    return "".join(e.text for e in events if isinstance(e, kind))


class LLMContract:
    """Tests every adapter must pass; subclasses provide an ``llm`` fixture."""

    exact: ClassVar[bool] = True

    async def test_only_typed_events_and_one_final_usage(self, llm: LLM) -> None:
        events = await run(llm, [ChatMessage.user("Say hello.")])
        assert all(isinstance(e, ReasoningDelta | TextDelta | ToolCall | Usage) for e in events)
        assert [type(e) for e in events].count(Usage) == 1
        assert isinstance(events[-1], Usage)
        assert not any(isinstance(e, ToolCall) for e in events)
        assert all(e.text for e in events if isinstance(e, TextDelta | ReasoningDelta))
        assert isinstance(llm.name, str) and llm.name

    async def test_text_deltas_concatenate_to_the_answer(self, llm: LLM) -> None:
        events = await run(llm, [ChatMessage.user("Say hello.")])
        answer = joined(events, TextDelta)
        if self.exact:
            assert answer == GREETING_ANSWER
            assert len([e for e in events if isinstance(e, TextDelta)]) > 1
        else:
            assert answer.strip()

    async def test_usage_reports_tokens(self, llm: LLM) -> None:
        events = await run(llm, [ChatMessage.user("Say hello.")])
        final = events[-1]
        assert isinstance(final, Usage)
        assert final.prompt_tokens > 0 and final.completion_tokens > 0
        assert final.total_tokens == final.prompt_tokens + final.completion_tokens

    async def test_tool_call_is_whole_with_dict_arguments(self, llm: LLM) -> None:
        events = await run(llm, [ChatMessage.user(QUESTION)], [CALCULATOR])
        calls = [e for e in events if isinstance(e, ToolCall)]
        assert len(calls) == 1
        call = calls[0]
        assert call.name == "calculator" and call.id
        assert isinstance(call.arguments, dict)
        jsonschema.validate(call.arguments, CALCULATOR.parameters)
        # A tool call ends the turn: no text after it, only the usage.
        assert events.index(call) == len(events) - 2
        if self.exact:
            assert call == CALL

    async def test_tool_result_leads_to_an_answer(self, llm: LLM) -> None:
        messages = [
            ChatMessage.user(QUESTION),
            ChatMessage.assistant("", [CALL]),
            ChatMessage.tool(CALL, "437"),
        ]
        events = await run(llm, messages, [CALCULATOR], LLMOptions(temperature=0))
        assert not any(isinstance(e, ToolCall) for e in events)
        assert "437" in joined(events, TextDelta)

    async def test_reasoning_streams_before_the_answer(self, llm: LLM) -> None:
        events = await run(llm, [ChatMessage.user("Say hello.")], (), LLMOptions(think=True))
        kinds = [type(e) for e in events]
        assert ReasoningDelta in kinds and TextDelta in kinds
        assert max(i for i, k in enumerate(kinds) if k is ReasoningDelta) < kinds.index(TextDelta)
        if self.exact:
            assert joined(events, ReasoningDelta) == REASONING

    async def test_response_schema_gives_valid_json(self, llm: LLM) -> None:
        options = LLMOptions(response_schema=ANSWER_SCHEMA, temperature=0)
        events = await run(llm, [ChatMessage.user(f"{QUESTION} Reply as JSON.")], (), options)
        jsonschema.validate(json.loads(joined(events, TextDelta)), ANSWER_SCHEMA)

    async def test_max_tokens_bounds_the_answer(self, llm: LLM) -> None:
        options = LLMOptions(max_tokens=3)
        events = await run(llm, [ChatMessage.user("Say hello.")], (), options)
        final = events[-1]
        assert isinstance(final, Usage) and final.completion_tokens <= 3
        if self.exact:
            assert GREETING_ANSWER.startswith(joined(events, TextDelta))

    async def test_empty_conversation_is_rejected(self, llm: LLM) -> None:
        with pytest.raises(LLMBadRequest):
            await run(llm, [])

    async def test_stopping_early_leaves_the_adapter_usable(self, llm: LLM) -> None:
        stream = llm.stream([ChatMessage.user("Say hello.")])
        first = await anext(stream)
        assert isinstance(first, TextDelta | ReasoningDelta)
        await stream.aclose()  # type: ignore[attr-defined]
        events = await run(llm, [ChatMessage.user("Say hello.")])
        assert isinstance(events[-1], Usage)

    async def test_concurrent_streams_do_not_mix(self, llm: LLM) -> None:
        plain, tooled = await asyncio.gather(
            run(llm, [ChatMessage.user("Say hello.")]),
            run(llm, [ChatMessage.user(QUESTION)], [CALCULATOR]),
        )
        assert not any(isinstance(e, ToolCall) for e in plain)
        assert any(isinstance(e, ToolCall) for e in tooled)
        if self.exact:
            assert joined(plain, TextDelta) == GREETING_ANSWER
            assert not any(isinstance(e, TextDelta) for e in tooled)
