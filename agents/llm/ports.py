"""The LLM port: messages, tool definitions and options in; a stream of typed events out.

The messages and the tool calls a model makes are the run state's own types
(`bus.run_state.ChatMessage`, `bus.run_state.ToolCall`), so a model's turn goes into the
state as it is.

Every adapter (OpenAI-compatible endpoint, local offline model, scripted model) implements
:class:`LLM` and passes the shared contract suite in ``tests/contracts/llm.py``.
The stream contract, in short:

* only :data:`LLMEvent` values are yielded;
* ``TextDelta`` texts concatenate to the answer, ``ReasoningDelta`` texts to the reasoning;
* a :class:`ToolCall` is yielded whole (never partial) with a dict of arguments; arguments
  that were not a JSON object arrive as ``{INVALID_ARGUMENTS_KEY: raw_text}`` so the gateway's
  schema check rejects them and the model can try again;
* exactly one :class:`Usage` ends every stream that completes;
* nothing is retried once an event has been yielded, so a consumer never sees text twice.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from agents.errors import LLMBadRequest
from bus.run_state import ChatMessage, ToolCall

INVALID_ARGUMENTS_KEY = "__invalid_json__"
"""Key under which a tool call's raw arguments are kept when they were not a JSON object."""

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class ReasoningDelta(BaseModel):
    """A piece of the model's reasoning (shown dimmed; not part of the answer)."""

    model_config = _FROZEN
    text: str


class TextDelta(BaseModel):
    """A piece of the answer text."""

    model_config = _FROZEN
    text: str


class Usage(BaseModel):
    """Tokens spent by one ``stream`` call (0 where the backend did not report them)."""

    model_config = _FROZEN
    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    cost_usd: float = Field(default=0.0, ge=0, description="Priced by `ObservedLLM`.")

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens


LLMEvent = ReasoningDelta | TextDelta | ToolCall | Usage
"""One item of an LLM stream (`ToolCall` is the run state's, `bus.run_state.ToolCall`)."""


class ToolDefinition(BaseModel):
    """A tool the model may call: name, what it does, and a JSON Schema for its arguments."""

    model_config = _FROZEN
    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class LLMOptions(BaseModel):
    """Per-call options; ``None`` leaves the backend's default."""

    model_config = _FROZEN
    model: str | None = Field(
        default=None, description="The model to call (None: the adapter's configured one)."
    )
    think: bool = False
    response_schema: dict[str, Any] | None = None
    max_tokens: int | None = Field(default=None, gt=0)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    require_tool: bool = Field(
        default=False,
        description="The turn must call one of the offered tools (OpenAI's tool_choice "
        "required): an adapter that can constrain the model to a call does.",
    )


@runtime_checkable
class LLM(Protocol):
    """A chat model that streams typed events."""

    @property
    def name(self) -> str:
        """A short label for logs and traces, e.g. ``openai:gpt-4o-mini``."""
        ...

    def stream(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        options: LLMOptions | None = None,
    ) -> AsyncIterator[LLMEvent]:
        """Run one model turn and yield its events as they are produced.

        Raises:
            agents.errors.LLMError: a subclass saying what failed and what to do.
        """
        ...


def check_request(messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition]) -> None:
    """Reject requests no backend can answer, the same way in every adapter.

    Raises:
        LLMBadRequest: no messages, or two tools with the same name.
    """
    if not messages:
        raise LLMBadRequest("the conversation is empty", hint="send at least one user message")
    names = [t.name for t in tools]
    if len(set(names)) != len(names):
        raise LLMBadRequest(f"duplicate tool names in {names}", hint="give each tool one name")
