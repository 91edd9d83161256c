"""What a local model's tool decision may still choose, given the calls the question has had.

A small model that has a tool's result in front of it often asks for the very same call
again, and again, until the run's tool loop runs out and the user gets "I don't know"
(seen with the 1.5B: eight identical ``current_time`` calls for one duration, sixteen
``search_docs`` for one policy question). Two rules stop that without a word of prompt:

- a call identical to one whose result the question already holds is answered instead
  (its result would be the same data);
- a tool called ``MAX_CALLS_PER_TOOL`` times for the current question is no longer
  offered by the decision's grammar (the tool list in the prompt stays the same, so the
  cached prefix does too).

"For the question" means since the last user message: earlier turns of the conversation
and their tools do not count.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence

from agents.llm.ports import ChatMessage, ToolCall, ToolDefinition

MAX_CALLS_PER_TOOL = 3


def _question_calls(messages: Sequence[ChatMessage]) -> list[ToolCall]:
    """The tool calls made since the last user message, whose results are in the thread."""
    start = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1) + 1
    answered = {m.tool_call_id for m in messages[start:] if m.role == "tool"}
    return [
        call
        for m in messages[start:]
        if m.role == "assistant"
        for call in m.tool_calls
        if call.id in answered
    ]


def _key(name: str, arguments: dict[str, object]) -> str:
    return name + json.dumps(arguments, sort_keys=True, ensure_ascii=False)


def still_offered(
    messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition]
) -> list[ToolDefinition]:
    """The tools the decision may still call: those used fewer than MAX_CALLS_PER_TOOL times."""
    used = Counter(call.name for call in _question_calls(messages))
    return [t for t in tools if used[t.name] < MAX_CALLS_PER_TOOL]


def repeats_a_call(messages: Sequence[ChatMessage], call: ToolCall) -> bool:
    """Whether the question already holds the result of this very call (same arguments)."""
    key = _key(call.name, call.arguments)
    return any(_key(c.name, c.arguments) == key for c in _question_calls(messages))
