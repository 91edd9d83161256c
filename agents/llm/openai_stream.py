"""Turn the SSE lines of a streamed OpenAI-style chat completion into typed LLM events.

Kept apart from the HTTP adapter so it can be fed recorded lines in tests. Tool-call deltas
are assembled by ``index`` across chunks (arguments are JSON text split anywhere) and each
call is yielded whole once the stream ends; usage comes from the last chunk that has it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterable
from dataclasses import dataclass, field
from typing import Any

from agents.errors import LLMBadResponse
from agents.llm.ports import (
    INVALID_ARGUMENTS_KEY,
    LLMEvent,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    Usage,
)
from bus.json_values import is_object


class StreamFailed(Exception):
    """The server reported an error inside the stream, or the stream stopped early."""


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    fragments: list[str] = field(default_factory=list[str])
    parsed: dict[str, Any] | None = None

    def finish(self, position: int) -> ToolCall:
        if not self.name:
            raise LLMBadResponse("the stream sent a tool call without a name")
        arguments = self.parsed if self.parsed is not None else parse_arguments(self.fragments)
        return ToolCall(id=self.id or f"call_{position}", name=self.name, arguments=arguments)


def parse_arguments(fragments: list[str]) -> dict[str, Any]:
    """Join argument fragments and parse them as a JSON object.

    Empty text means no arguments. Anything that is not a JSON object is kept verbatim under
    ``INVALID_ARGUMENTS_KEY`` instead of raising: the gateway's schema check then rejects the
    call and the model sees why, which lets it recover on its next turn.
    """
    raw = "".join(fragments)
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {INVALID_ARGUMENTS_KEY: raw}
    return value if is_object(value) else {INVALID_ARGUMENTS_KEY: raw}


async def sse_data(lines: AsyncIterable[str]) -> AsyncGenerator[str]:
    """Yield the ``data`` payload of each server-sent event (multi-line data joined by \\n)."""
    data: list[str] = []
    async for line in lines:
        if not line:
            if data:
                yield "\n".join(data)
                data = []
        elif line.startswith("data:"):
            payload = line[5:]
            data.append(payload[1:] if payload.startswith(" ") else payload)
        # Comments (":"), "event:", "id:" and "retry:" lines carry nothing we use.
    if data:
        yield "\n".join(data)


async def parse_stream(lines: AsyncIterable[str]) -> AsyncGenerator[LLMEvent]:
    """Yield reasoning and text deltas as they arrive, then the tool calls, then usage.

    Raises:
        StreamFailed: an ``error`` object arrived, or the stream ended without a
            ``finish_reason`` or ``[DONE]`` (it was cut off).
        LLMBadResponse: a payload was not JSON or a tool call had no name.
    """
    calls: dict[int, _PartialCall] = {}
    usage: dict[str, Any] = {}
    finished = False
    async for data in sse_data(lines):
        if data.strip() == "[DONE]":
            finished = True
            break
        chunk = _load(data)
        if chunk.get("error"):
            raise StreamFailed(f"the server reported an error mid-stream: {chunk['error']}")
        if is_object(reported := chunk.get("usage")):
            usage = reported
        for choice in chunk.get("choices") or ():
            if not is_object(choice) or choice.get("index", 0) != 0:
                continue  # we ask for one choice; ignore anything else
            finished = finished or bool(choice.get("finish_reason"))
            delta: Any = choice.get("delta") or {}
            thought = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(thought, str) and thought:
                yield ReasoningDelta(text=thought)
            content = delta.get("content")
            if isinstance(content, str) and content:
                yield TextDelta(text=content)
            for piece in delta.get("tool_calls") or ():
                _add_piece(calls, piece)
    if not finished:
        raise StreamFailed("the stream ended before the completion finished")
    for position, index in enumerate(sorted(calls)):
        yield calls[index].finish(position)
    yield Usage(
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
    )


def _load(data: str) -> dict[str, Any]:
    try:
        chunk = json.loads(data)
    except ValueError as e:
        raise LLMBadResponse(f"the stream sent a payload that is not JSON: {data[:200]!r}") from e
    if not is_object(chunk):
        raise LLMBadResponse(f"the stream sent {type(chunk).__name__}, not a chunk object")
    return chunk


def _add_piece(calls: dict[int, _PartialCall], piece: Any) -> None:
    if not is_object(piece):
        return
    index = piece.get("index")
    if not isinstance(index, int):
        # Some servers omit the index: a new id starts a call, anything else continues one.
        known = {c.id: i for i, c in calls.items() if c.id}
        new_id = piece.get("id")
        index = known.get(new_id, len(calls)) if new_id else max(calls, default=0)
    call = calls.setdefault(index, _PartialCall())
    call.id = call.id or str(piece.get("id") or "")
    function: Any = piece.get("function") or {}
    # The name arrives whole in the first piece; later pieces may repeat it, so keep the first.
    call.name = call.name or str(function.get("name") or "")
    arguments = function.get("arguments")
    if is_object(arguments):  # a few servers send parsed arguments
        call.parsed = arguments
    elif isinstance(arguments, str):
        call.fragments.append(arguments)
