"""The real 0.5B through the issue-29 path: parallel slots, cached prefixes, per-call records.

Slow (the model is loaded; a minute or so on a busy 2-core host) and skipped, with the
reason, when the ``local`` extra is not installed.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import structlog

from agents.llm.local import LocalLLM
from agents.llm.local_calls import CallRecord
from agents.llm.ports import ChatMessage, LLMOptions, ToolCall
from tests.contracts.llm import CALCULATOR, QUESTION, run

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


async def test_two_runs_at_once_each_decide_and_the_second_turn_reuses_the_cached_prefix(
    local_model_dir: Path,
) -> None:
    records: list[CallRecord] = []
    llm = LocalLLM(local_model_dir, n_ctx=2048, n_parallel=2, n_threads=1, on_call=records.append)
    question = [ChatMessage.user(QUESTION)]
    options = LLMOptions(temperature=0)

    async def decide(run_id: str) -> list[str]:
        with structlog.contextvars.bound_contextvars(role="researcher", run_id=run_id):
            events = await run(llm, question, [CALCULATOR], options)
        return [e.name for e in events if isinstance(e, ToolCall)]

    try:
        # Two runs at once: both decoded by the runtime's two slots, both call the tool.
        assert await asyncio.gather(decide("r1"), decide("r2")) == [["calculator"]] * 2
        # A third decision finds the decision prompt (tools, examples) cached in a slot.
        assert await decide("r3") == ["calculator"]
    finally:
        await llm.aclose()
    assert [r.kind for r in records] == ["researcher.decision"] * 3
    assert sorted(r.run_id for r in records) == ["r1", "r2", "r3"]
    third = next(r for r in records if r.run_id == "r3")
    assert third.cached_tokens >= third.prompt_tokens // 2, third
    assert all(r.decode_tokens > 0 and r.decode_tps > 0 for r in records)
