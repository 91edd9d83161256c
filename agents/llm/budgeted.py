"""Every model call checked against the run's budgets: reserved before, settled after.

`BudgetedLLM` wraps the process's (priced) `LLM`. Inside a metered step
(`agents.budget.CURRENT`) a call:

1. reserves its prompt (estimated) plus the completion it may write (``max_tokens``, else
   ``reserve_tokens``) in every scope at once, taking less when less is left but never
   less than the prompt and one token; a budget with less room refuses the call before
   it starts (`agents.budget.BudgetExhausted`);
2. counts the tokens it streams, and when they reach the hold reserves more; when no more
   is left the stream is cut there, the step marked, and a `Usage` of what was streamed
   ends it, so the handler finishes its turn with the partial text;
3. settles to the model's reported usage (the estimate when it reports none), once per
   call id, so a redelivered step is not charged twice. A call that held nothing (no
   budget limits the run) is summed, and the sum charged with the step's commit
   (`agents.budget.StepBudget.add`).

A call that fails gives its hold back uncharged: its retry reserves and charges again.
Outside a metered step (evals, the intake's tests) calls pass through unmetered.
"""

from __future__ import annotations

import functools
import json
import math
import time
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence

from agents import metrics
from agents.budget import CURRENT, BudgetExhausted, StepBudget, show_spent
from agents.llm.observed import ObservedLLM, price_of
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
from bus.budget import micro_usd
from bus.run_state import ChatMessage
from bus.runtime.metrics import record

#: Characters per token when estimating (the usual figure for English text and code).
CHARS_PER_TOKEN = 4


#: A tool definition's size in characters, by identity: the same definitions (a tenant's
#: cached catalogue) are offered on every call, and their JSON does not change.
_TOOL_CHARS: dict[int, tuple[ToolDefinition, int]] = {}


def _tool_chars(tool: ToolDefinition) -> int:
    known = _TOOL_CHARS.get(id(tool))
    if known is not None and known[0] is tool:
        return known[1]
    if len(_TOOL_CHARS) > 4_096:
        _TOOL_CHARS.clear()
    size = len(tool.model_dump_json())
    _TOOL_CHARS[id(tool)] = (tool, size)
    return size


def estimate_prompt(messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition]) -> int:
    """A prompt's tokens, estimated: its characters over four, a few per message."""
    chars = sum(
        len(m.content) + sum(len(json.dumps(c.arguments)) for c in m.tool_calls) for m in messages
    )
    chars += sum(_tool_chars(t) for t in tools)
    return math.ceil(chars / CHARS_PER_TOKEN) + 4 * len(messages)


def estimate_text(text: str) -> int:
    """A streamed delta's tokens, estimated (at least one)."""
    return max(1, math.ceil(len(text) / CHARS_PER_TOKEN))


class BudgetedLLM:
    """An `LLM` whose calls reserve and settle against the step's budgets.

    Args:
        inner: the model (already priced: its `Usage` carries ``cost_usd``).
        prices: the price table, for the dollars a hold stands for.
        reserve_tokens: the completion a call holds when it sets no ``max_tokens``.
    """

    def __init__(
        self, inner: LLM, prices: Mapping[str, ModelPrice], *, reserve_tokens: int = 1024
    ) -> None:
        self.inner = inner
        self._price = price_of(prices, self.name)
        self.reserve_tokens = reserve_tokens

    @property
    def name(self) -> str:
        """The wrapped model's name ("" for a stand-in that has none, as tests' may)."""
        name: object = getattr(self.inner, "name", "")
        return name if isinstance(name, str) else ""

    def stream(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        options: LLMOptions | None = None,
    ) -> AsyncIterator[LLMEvent]:
        """The wrapped model's events, within the step's budgets."""
        step = CURRENT.get()
        if step is None:
            return self.inner.stream(messages, tools, options)
        if not step.limited and isinstance(self.inner, ObservedLLM):
            # Nothing to hold: the observer, which reads every event anyway, hands back
            # the call's usage at its end, so no second generator runs per token.
            step.next_call_id()  # numbered as a held call is: the step's ids stay in step
            counted = functools.partial(self._count, step, messages, tools)
            return self.inner.stream(messages, tools, options, ended=counted)
        return self._metered(step, messages, tools, options)

    def _count(
        self,
        step: StepBudget,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition],
        usage: Usage | None,
    ) -> None:
        """Count an unlimited call's spending to the step (charged with its commit)."""
        estimated = (
            0 if usage is not None and usage.total_tokens else estimate_prompt(messages, tools)
        )
        step.add(*self._spent(usage, estimated))

    def _micro_per_token(self) -> float:
        """Micro-dollars a held token may cost: the dearer of input and output."""
        if self._price is None:
            return 0.0
        return max(self._price.input, self._price.output) * 1000

    def _micro_cost(self, prompt: int, completion: int) -> int:
        if self._price is None:
            return 0
        return micro_usd((prompt * self._price.input + completion * self._price.output) / 1000)

    async def _metered(
        self,
        step: StepBudget,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition],
        options: LLMOptions | None,
    ) -> AsyncIterator[LLMEvent]:
        call_id = step.next_call_id()
        # A hold needs the prompt's estimate; an unlimited call needs it only when the model
        # reports no usage (worked out then).
        prompt = estimate_prompt(messages, tools) if step.limited else 0
        completion = (options.max_tokens if options else None) or self.reserve_tokens
        held = 0
        if step.limited:
            held = await self._reserve(step, call_id, prompt + completion, prompt + 1)
        streamed = 0
        cut = False
        usage: Usage | None = None
        stream = self.inner.stream(messages, tools, options)
        try:
            async for event in stream:
                if held and isinstance(event, TextDelta | ReasoningDelta):
                    tokens = estimate_text(event.text)
                    if prompt + streamed + tokens > held:  # past the hold: hold more first
                        want = prompt + streamed + tokens
                        grown = await self._more(step, call_id, want, completion)
                        if grown is None:  # no more to hold: cut before this delta
                            cut = True
                            break
                        held = grown
                    streamed += tokens
                if isinstance(event, Usage):
                    usage = event
                yield event
        except BaseException:
            await self._close(stream)
            if step.limited:  # a run no budget limits holds nothing
                await step.ledger.release(call_id)
            raise
        if cut:  # cut mid-stream: what was streamed is charged and shown
            await self._close(stream)
            usage = Usage(
                prompt_tokens=prompt,
                completion_tokens=streamed,
                cost_usd=self._micro_cost(prompt, streamed) / 1_000_000,
            )
            record(metrics.BUDGET_CUTS.labels(step.cut or "").inc)
            await self._settle(step, call_id, usage, prompt + streamed)
            yield usage
            return
        if not step.limited and (usage is None or not usage.total_tokens):
            prompt = estimate_prompt(messages, tools)
        await self._settle(step, call_id, usage, prompt + streamed)

    async def _reserve(self, step: StepBudget, call_id: str, want: int, need: int) -> int:
        grant = await step.ledger.reserve(
            call_id,
            step.scopes,
            want=want,
            need=min(need, want),
            micro_usd_per_token=self._micro_per_token(),
            now=time.time(),
            expires_at=step.expires_at,
        )
        if grant.refused is not None:
            record(metrics.BUDGET_CUTS.labels(grant.refused).inc)
            raise BudgetExhausted(grant.refused)
        # An earlier delivery of this call was charged: it runs again, charged nothing.
        return 0 if grant.charged else grant.held

    async def _more(self, step: StepBudget, call_id: str, spent: int, chunk: int) -> int | None:
        """A bigger hold for a call that streamed past its own (None: none left, the step
        is cut; 0: another delivery charged the call, stop metering it)."""
        grant = await step.ledger.reserve(
            call_id,
            step.scopes,
            want=spent + max(64, chunk // 4),
            need=spent,
            micro_usd_per_token=self._micro_per_token(),
            now=time.time(),
            expires_at=step.expires_at,
        )
        if grant.refused is not None:
            step.cut = grant.refused
            return None
        return 0 if grant.charged else grant.held

    def _spent(self, usage: Usage | None, estimated: int) -> tuple[int, int]:
        """The tokens and micro-dollars a call spent: as the model reported them, else
        ``estimated`` tokens, all of them priced as prompt."""
        if usage is not None and usage.total_tokens:
            cost = micro_usd(usage.cost_usd) if usage.cost_usd else 0
            cost = cost or self._micro_cost(usage.prompt_tokens, usage.completion_tokens)
            return usage.total_tokens, cost
        return estimated, self._micro_cost(estimated, 0)

    async def _settle(
        self, step: StepBudget, call_id: str, usage: Usage | None, estimated: int
    ) -> None:
        tokens, cost = self._spent(usage, estimated)
        if not step.limited:  # nothing held: charged with the step's commit
            step.add(tokens, cost)
            return
        # The next call's hold must see this one's charge.
        totals = await step.ledger.settle(call_id, step.scopes, tokens=tokens, micro_usd=cost)
        if totals is not None:
            show_spent(step.ledger.tenant_id, totals)

    @staticmethod
    async def _close(stream: AsyncIterator[LLMEvent]) -> None:
        if isinstance(stream, AsyncGenerator):
            await stream.aclose()
