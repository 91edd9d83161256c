"""The scripted model: the shared contract, script helpers, cursor, function scripts, delay."""

from __future__ import annotations

import time
from collections.abc import Sequence

import pytest

from agents.errors import ScriptExhausted
from agents.llm.ports import (
    LLM,
    ChatMessage,
    LLMOptions,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolDefinition,
    Usage,
)
from agents.llm.scripted import (
    BENCHMARK_ANSWER,
    ScriptedLLM,
    Turn,
    reasoning,
    text,
    tokens,
    tool_call,
    turn,
    usage,
)
from tests.contracts.llm import CALCULATOR, LLMContract, canonical_turn, joined, run


class TestScriptedContract(LLMContract):
    """The scripted model driven by the contract's canonical responder."""

    @pytest.fixture
    def llm(self) -> LLM:
        return ScriptedLLM(canonical_turn)


def test_scripted_model_satisfies_the_protocol() -> None:
    assert isinstance(ScriptedLLM(), LLM)


def test_tokens_split_text_into_words_that_rejoin() -> None:
    sample = "  23 × 19\n= 437 ✓ "
    assert "".join(tokens(sample)) == sample
    assert tokens("a b") == ["a", " b"]
    assert tokens("") == []


def test_turn_flattens_parts_and_adds_usage_when_missing() -> None:
    built = turn(reasoning("think more"), text("a b"), tool_call("calc", {"x": 1}, id="c1"))
    assert [type(e) for e in built] == [
        ReasoningDelta,
        ReasoningDelta,
        TextDelta,
        TextDelta,
        ToolCall,
        Usage,
    ]
    assert built[-1] == Usage(prompt_tokens=0, completion_tokens=5)
    assert turn(text("x"), usage(7, 1))[-1] == usage(7, 1)


def test_tool_call_ids_are_unique_unless_given() -> None:
    assert tool_call("calc").id != tool_call("calc").id
    assert tool_call("calc", id="fixed").id == "fixed"


async def test_default_script_is_the_benchmark_turn() -> None:
    llm = ScriptedLLM()
    question = [ChatMessage.user("What is 23 × 19?")]
    first = await run(llm, question, [CALCULATOR])
    call = first[0]
    assert isinstance(call, ToolCall)
    assert (call.name, call.arguments) == ("calculator", {"expression": "23 * 19"})
    second = await run(
        llm, [*question, ChatMessage.assistant("", [call]), ChatMessage.tool(call, "437")]
    )
    deltas = [e for e in second if isinstance(e, TextDelta)]
    assert len(deltas) == 40
    assert joined(second, TextDelta) == BENCHMARK_ANSWER and "437" in BENCHMARK_ANSWER
    assert second[-1] == Usage(prompt_tokens=60, completion_tokens=40)


async def test_benchmark_turn_answers_directly_without_a_calculator() -> None:
    events = await run(ScriptedLLM(), [ChatMessage.user("What is 23 × 19?")])
    assert joined(events, TextDelta) == BENCHMARK_ANSWER


async def test_benchmark_turn_calls_the_tool_a_question_asks_for_if_offered() -> None:
    ledger = ToolDefinition(name="ledger_append")
    question = [ChatMessage.user('Please call ledger_append with {"entry": "pay 5"} now.')]
    [call, _] = await run(ScriptedLLM(), question, [CALCULATOR, ledger])
    assert isinstance(call, ToolCall)
    assert (call.name, call.arguments) == ("ledger_append", {"entry": "pay 5"})
    [fallback, _] = await run(ScriptedLLM(), question, [CALCULATOR])  # not offered
    assert isinstance(fallback, ToolCall) and fallback.name == "calculator"


async def test_list_script_plays_turns_in_order_then_raises() -> None:
    llm = ScriptedLLM([turn(text("one")), turn(text("two"))])
    hi = [ChatMessage.user("hi")]
    assert joined(await run(llm, hi), TextDelta) == "one"
    assert joined(await run(llm, hi), TextDelta) == "two"
    with pytest.raises(ScriptExhausted) as caught:
        await run(llm, hi)
    assert caught.value.code == "llm_script_exhausted"


async def test_cycle_replays_the_script() -> None:
    llm = ScriptedLLM([turn(text("one")), turn(text("two"))], cycle=True)
    hi = [ChatMessage.user("hi")]
    said = [joined(await run(llm, hi), TextDelta) for _ in range(3)]
    assert said == ["one", "two", "one"]


async def test_function_script_sees_the_request_and_requests_are_recorded() -> None:
    def echo(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ) -> Turn:
        return turn(text(f"{messages[-1].content}|{len(tools)}|{options.think}"))

    llm = ScriptedLLM(echo)
    options = LLMOptions(think=True)
    events = await run(llm, [ChatMessage.user("ping")], [CALCULATOR], options)
    assert joined(events, TextDelta) == "ping|1|True"
    assert llm.requests == [((ChatMessage.user("ping"),), (CALCULATOR,), options)]


async def test_token_delay_paces_deltas_only() -> None:
    llm = ScriptedLLM([turn(text("a b c d"), tool_call("calc"))], token_delay=0.02)
    started = time.perf_counter()
    await run(llm, [ChatMessage.user("hi")])
    assert 0.08 <= time.perf_counter() - started < 1.0


async def test_latency_waits_once_per_call_and_record_off_keeps_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import asyncio

    waits: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        await real_sleep(0)

    monkeypatch.setattr("agents.llm.scripted.asyncio.sleep", sleep)
    llm = ScriptedLLM([turn(text("a b c"))], latency=1.5, cycle=True, record=False)
    await run(llm, [ChatMessage.user("hi")])
    await run(llm, [ChatMessage.user("hi")])
    assert waits == [1.5, 1.5]  # before each call's first event, not per token
    assert llm.requests == []
