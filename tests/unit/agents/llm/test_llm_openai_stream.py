"""SSE parsing and tool-call assembly from recorded lines, plus request building."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import pytest

from agents.errors import LLMBadResponse
from agents.llm.openai_compat import OpenAICompatConfig, _retry_after, build_body
from agents.llm.openai_stream import StreamFailed, parse_arguments, parse_stream, sse_data
from agents.llm.ports import (
    INVALID_ARGUMENTS_KEY,
    ChatMessage,
    LLMEvent,
    LLMOptions,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolDefinition,
    Usage,
)


async def lines_of(items: Sequence[str]) -> AsyncIterator[str]:
    for item in items:
        yield item


def sse(*chunks: dict[str, Any] | str) -> list[str]:
    out: list[str] = []
    for chunk in chunks:
        out += [f"data: {chunk if isinstance(chunk, str) else json.dumps(chunk)}", ""]
    return out


def delta(**fields: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": fields}]}


FINISH = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}


async def parse(lines: list[str]) -> list[LLMEvent]:
    return [e async for e in parse_stream(lines_of(lines))]


async def test_sse_data_joins_multiline_data_and_skips_comments() -> None:
    lines = [": keep-alive", "event: message", "data: a", "data:b", "", "id: 7", "data: c"]
    assert [d async for d in sse_data(lines_of(lines))] == ["a\nb", "c"]


async def test_text_reasoning_and_usage_in_order() -> None:
    events = await parse(
        sse(
            delta(role="assistant", content=""),
            delta(reasoning_content="hmm "),
            delta(reasoning="ok"),
            delta(content="4"),
            delta(content="37"),
            FINISH,
            {"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 4}},
            "[DONE]",
        )
    )
    assert events == [
        ReasoningDelta(text="hmm "),
        ReasoningDelta(text="ok"),
        TextDelta(text="4"),
        TextDelta(text="37"),
        Usage(prompt_tokens=9, completion_tokens=4),
    ]


async def test_tool_calls_are_assembled_by_index_and_emitted_whole() -> None:
    def piece(index: int, **function: str) -> dict[str, Any]:
        return delta(tool_calls=[{"index": index, "function": function}])

    events = await parse(
        sse(
            delta(
                tool_calls=[
                    {"index": 0, "id": "a", "type": "function", "function": {"name": "calc"}}
                ]
            ),
            delta(
                tool_calls=[{"index": 1, "id": "b", "function": {"name": "time", "arguments": ""}}]
            ),
            piece(0, arguments='{"expr'),
            piece(1, arguments="{}"),
            piece(0, arguments='ession": "2'),
            piece(0, name="calc", arguments=' * 3"}'),  # a repeated name must not double
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        )
    )
    assert events == [
        ToolCall(id="a", name="calc", arguments={"expression": "2 * 3"}),
        ToolCall(id="b", name="time", arguments={}),
        Usage(),
    ]


async def test_calls_without_index_and_with_parsed_arguments() -> None:
    events = await parse(
        sse(
            delta(tool_calls=[{"id": "x", "function": {"name": "f", "arguments": {"n": 1}}}]),
            delta(tool_calls=[{"id": "y", "function": {"name": "g", "arguments": '{"m"'}}]),
            delta(tool_calls=[{"function": {"arguments": ": 2}"}}]),
            "[DONE]",
        )
    )
    assert events[:2] == [
        ToolCall(id="x", name="f", arguments={"n": 1}),
        ToolCall(id="y", name="g", arguments={"m": 2}),
    ]


@pytest.mark.parametrize(
    ("fragments", "expected"),
    [
        ([], {}),
        (["  "], {}),
        (['{"a":', " 1}"], {"a": 1}),
        (["[1, 2]"], {INVALID_ARGUMENTS_KEY: "[1, 2]"}),
        (['{"a": 1'], {INVALID_ARGUMENTS_KEY: '{"a": 1'}),
    ],
)
def test_parse_arguments(fragments: list[str], expected: dict[str, Any]) -> None:
    assert parse_arguments(fragments) == expected


async def test_a_cut_off_stream_fails() -> None:
    with pytest.raises(StreamFailed, match="ended before"):
        await parse(sse(delta(content="half")))


async def test_an_error_object_mid_stream_fails() -> None:
    with pytest.raises(StreamFailed, match="overloaded"):
        await parse(sse(delta(content="a"), {"error": {"message": "overloaded"}}))


async def test_a_non_json_payload_is_a_bad_response() -> None:
    with pytest.raises(LLMBadResponse, match="not JSON"):
        await parse(sse("<html>"))


async def test_a_call_without_name_is_a_bad_response() -> None:
    with pytest.raises(LLMBadResponse, match="without a name"):
        await parse(sse(delta(tool_calls=[{"index": 0, "function": {"arguments": "{}"}}]), FINISH))


async def test_other_choices_are_ignored() -> None:
    other = {"choices": [{"index": 1, "delta": {"content": "no"}}]}
    assert await parse(sse(other, delta(content="yes"), FINISH)) == [TextDelta(text="yes"), Usage()]


def test_a_turn_asked_for_a_call_sends_tool_choice_required() -> None:
    config = OpenAICompatConfig(base_url="http://x/v1", model="m")
    tool = ToolDefinition(name="lookup")
    asked = build_body(config, [ChatMessage.user("hi")], [tool], LLMOptions(require_tool=True))
    free = build_body(config, [ChatMessage.user("hi")], [tool], LLMOptions())
    assert asked["tool_choice"] == "required" and "tool_choice" not in free


def test_build_body_options_and_think_styles() -> None:
    config = OpenAICompatConfig(base_url="http://x/v1", model="m", think_param="reasoning_effort")
    body = build_body(config, [ChatMessage.user("hi")], (), LLMOptions(think=True))
    assert body["reasoning_effort"] == "medium"
    assert "tools" not in body and "max_tokens" not in body and "response_format" not in body
    plain = config.model_copy(update={"think_param": "none"})
    body = build_body(plain, [ChatMessage.user("hi")], (), LLMOptions(think=True))
    assert "reasoning_effort" not in body and "chat_template_kwargs" not in body


def test_retry_after_forms() -> None:
    assert _retry_after(httpx.Headers({"retry-after": "2"})) == 2.0
    assert _retry_after(httpx.Headers({"retry-after-ms": "250"})) == 0.25
    assert _retry_after(httpx.Headers({})) is None
    assert _retry_after(httpx.Headers({"retry-after": "soon"})) is None
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    wait = _retry_after(httpx.Headers({"retry-after": later}))
    assert wait is not None and 25 < wait <= 30
