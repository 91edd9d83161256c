"""Every model call observed: a GenAI span, the model metrics, and its cost.

`ObservedLLM` wraps the process's `LLM`. Per ``stream`` it prices the `Usage` from the
deployment's table (``AGENTBUS_LLM_PRICES``) into ``Usage.cost_usd``, counts the call,
tokens, latency, time to first token and cost (at the step's commit), and with tracing on
records a ``chat`` span with the OpenTelemetry GenAI attributes.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence

import structlog

from agents import metrics
from agents.llm.ports import (
    LLM,
    LLMEvent,
    LLMOptions,
    ReasoningDelta,
    TextDelta,
    ToolDefinition,
    Usage,
)
from agents.settings import ModelPrice
from bus import tracing
from bus.frozen import replaced
from bus.run_state import ChatMessage
from bus.runtime.metrics import child, record

#: What `ObservedLLM.stream` calls once a call's stream ran to its end: its usage, or None.
Ended = Callable[[Usage | None], None]


def price_of(prices: Mapping[str, ModelPrice], model: str) -> ModelPrice | None:
    """The price of ``model`` (``adapter:name`` or ``name``), None when the table lacks it."""
    return prices.get(model) or prices.get(model.partition(":")[2])


def cost_usd(price: ModelPrice | None, usage: Usage) -> float:
    """What ``usage`` cost at ``price`` (0 without a price)."""
    if price is None:
        return 0.0
    return (usage.prompt_tokens * price.input + usage.completion_tokens * price.output) / 1000


class ObservedLLM:
    """An `LLM` that prices, counts and traces every call of the one it wraps."""

    def __init__(self, inner: LLM, prices: Mapping[str, ModelPrice]) -> None:
        self.inner = inner
        self._price = price_of(prices, inner.name)

    @property
    def name(self) -> str:
        """The wrapped model's name."""
        return self.inner.name

    def stream(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        options: LLMOptions | None = None,
        *,
        ended: Ended | None = None,
    ) -> AsyncIterator[LLMEvent]:
        """The wrapped model's events; the closing `Usage` carries its cost.

        With tracing off the caller iterates `_observe` itself: no generator layer (and no
        attribute dict) per event for a span that is not recorded. ``ended`` is called
        with the call's (priced) usage, None if it reported none, once its stream ran to
        its end (not when it failed or was closed early): what a caller that only counts
        the call needs, without a generator layer of its own over every event.
        """
        bound = structlog.contextvars.get_contextvars()
        agent, tenant = str(bound.get("role", "")), str(bound.get("tenant_id", ""))
        model = self.inner.name
        if not tracing.ENABLED:
            return self._observe(messages, tools, options, model, agent, tenant, ended)
        return self._traced(messages, tools, options, model, agent, tenant, ended)

    async def _traced(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition],
        options: LLMOptions | None,
        model: str,
        agent: str,
        tenant: str,
        ended: Ended | None,
    ) -> AsyncIterator[LLMEvent]:
        attributes: dict[str, str | int] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": model.partition(":")[0] if ":" in model else model,
            "gen_ai.request.model": model,
            "gen_ai.agent.name": agent,
        }
        if options is not None and options.max_tokens:
            attributes["gen_ai.request.max_tokens"] = options.max_tokens
        with tracing.span(f"chat {model}", attributes, kind="client"):
            stream = self._observe(messages, tools, options, model, agent, tenant, ended)
            async for event in stream:
                yield event

    async def _observe(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition],
        options: LLMOptions | None,
        model: str,
        agent: str,
        tenant: str,
        ended: Ended | None = None,
    ) -> AsyncIterator[LLMEvent]:
        started = time.perf_counter()
        first: float | None = None
        usage: Usage | None = None
        try:
            async for event in self.inner.stream(messages, tools, options):
                if first is None and isinstance(event, TextDelta | ReasoningDelta):
                    first = time.perf_counter() - started
                if isinstance(event, Usage):
                    event = replaced(event, {"cost_usd": cost_usd(self._price, event)})
                    self._count(event, model, tenant, first)
                    usage = event
                yield event
        except BaseException:
            record(child(metrics.MODEL_CALLS, model, agent, "error").inc)
            raise
        record(child(metrics.MODEL_CALLS, model, agent, "ok").inc)
        record(child(metrics.MODEL_SECONDS, model).observe, time.perf_counter() - started)
        if ended is not None:
            ended(usage)

    def _count(self, usage: Usage, model: str, tenant: str, first: float | None) -> None:
        record(child(metrics.MODEL_TOKENS, model, "input").inc, usage.prompt_tokens)
        record(child(metrics.MODEL_TOKENS, model, "output").inc, usage.completion_tokens)
        if first is not None:
            record(child(metrics.MODEL_FIRST_TOKEN_SECONDS, model).observe, first)
        if usage.cost_usd:
            record(child(metrics.COST, tenant, model).inc, usage.cost_usd)
        if not tracing.ENABLED:
            return
        attributes: dict[str, str | int | float] = {
            "gen_ai.response.model": model,
            "gen_ai.usage.input_tokens": usage.prompt_tokens,
            "gen_ai.usage.output_tokens": usage.completion_tokens,
            "agentbus.llm.cost_usd": usage.cost_usd,
        }
        if first is not None:
            attributes["gen_ai.response.time_to_first_token"] = first
        tracing.set_attributes(attributes)
