"""The offline model, really loaded: the shared contract, the 23 × 19 tool choice, speed.

Slow (about a minute on 2 cores) and skipped, with the reason, when the ``local`` extra
(xllamacpp and the weight packages) is not installed. Run with ``pytest -m slow -s`` to see
the measured load time, tokens per second and resident memory.
"""

from __future__ import annotations

import asyncio
import resource
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.llm.local import LocalLLM
from agents.llm.local_calls import CallRecord
from agents.llm.ports import LLM, ChatMessage, LLMOptions, TextDelta, ToolCall, Usage
from tests.contracts.llm import CALCULATOR, QUESTION, LLMContract, joined, run

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def local_llm(local_model_dir: Path) -> Iterator[LocalLLM]:
    llm = LocalLLM(local_model_dir, n_ctx=4096)
    yield llm
    asyncio.run(llm.aclose())


class TestLocalContract(LLMContract):
    """The real model keeps the stream contract; wording is not checked."""

    exact = False

    @pytest.fixture
    def llm(self, local_llm: LocalLLM) -> LLM:
        return local_llm


def product_of(expression: str) -> int:
    """Evaluate a product like ``23 * 19`` (or ``23 × 19``) without eval()."""
    factors = expression.replace("×", "*").replace("x", "*").split("*")
    result = 1
    for factor in factors:
        result *= int(factor.strip())
    return result


async def test_23_times_19_calls_the_calculator_then_answers_437(local_llm: LocalLLM) -> None:
    question = [ChatMessage.user(QUESTION)]
    first = await run(local_llm, question, [CALCULATOR], LLMOptions(temperature=0))
    calls = [e for e in first if isinstance(e, ToolCall)]
    assert [c.name for c in calls] == ["calculator"]
    assert product_of(calls[0].arguments["expression"]) == 437
    history = [*question, ChatMessage.assistant("", calls), ChatMessage.tool(calls[0], "437")]
    second = await run(local_llm, history, [CALCULATOR], LLMOptions(temperature=0))
    assert not any(isinstance(e, ToolCall) for e in second)
    assert "437" in joined(second, TextDelta)


async def test_after_the_tool_result_one_generation_answers(local_model_dir: Path) -> None:
    """Folded: the call after the calculator's result is one completion, and it answers;
    unfolded, the same turn is a decision and then a separate answer."""
    question = [ChatMessage.user(QUESTION)]
    call = ToolCall(id="c1", name="calculator", arguments={"expression": "23 * 19"})
    history = [*question, ChatMessage.assistant("", [call]), ChatMessage.tool(call, "437")]
    steps: dict[bool, list[str]] = {}
    for fold in (True, False):
        records: list[CallRecord] = []
        llm = LocalLLM(local_model_dir, n_ctx=4096, fold_answer=fold, on_call=records.append)
        try:
            events = await run(llm, history, [CALCULATOR], LLMOptions(temperature=0))
        finally:
            await llm.aclose()
        assert not any(isinstance(e, ToolCall) for e in events)
        assert "437" in joined(events, TextDelta)
        steps[fold] = [r.step for r in records]
    assert steps == {True: ["after_tool"], False: ["decision", "answer"]}


async def test_a_simple_prompt_is_answered(local_llm: LocalLLM) -> None:
    events = await run(
        local_llm,
        [ChatMessage.user("What is the capital of France?")],
        (),
        LLMOptions(temperature=0),
    )
    assert "Paris" in joined(events, TextDelta)


async def test_speed_and_memory_are_reported(local_llm: LocalLLM) -> None:
    await local_llm.load()
    started = time.perf_counter()
    events = await run(
        local_llm,
        [ChatMessage.user("Explain in about 150 words how a hash table works.")],
        (),
        LLMOptions(max_tokens=200, temperature=0),
    )
    elapsed = time.perf_counter() - started
    usage = events[-1]
    assert isinstance(usage, Usage) and usage.completion_tokens > 20
    decode = float(local_llm.last_timings.get("predicted_per_second") or 0)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"\nlocal model: load {local_llm.load_seconds:.1f}s, {usage.completion_tokens} tokens "
        f"in {elapsed:.2f}s ({usage.completion_tokens / elapsed:.1f} tok/s end to end, "
        f"{decode:.1f} tok/s decode), peak RSS {rss_mb:.0f} MB"
    )
    # Reported, not a target: a figure, not a timed assertion (the host's load moves it).
    assert decode > 0
