"""LocalLLM's per-call records and request bodies, against a small fake of the runtime.

The fake stands in for xllamacpp's ``Server``: it answers a JSON-schema request (the tool
decision) with a call of the calculator or with ``{"action": "answer"}``, and any other
request with prose, each ending with the runtime's usage and timings chunk.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import structlog

from agents.llm import local_prompts as prompts
from agents.llm.local import LocalLLM
from agents.llm.local_calls import CallRecord, record_of
from agents.llm.ports import ChatMessage, LLMOptions, TextDelta, ToolCall
from tests.contracts.llm import CALCULATOR, QUESTION, run

TIMINGS = {
    "cache_n": 180,
    "prompt_n": 20,
    "prompt_ms": 400.0,
    "predicted_n": 6,
    "predicted_ms": 300.0,
    "predicted_per_second": 20.0,
}


class FakeServer:
    """Replays a decision or an answer, with timings; keeps every request body.

    A folded request (a ``grammar``: one more call, or the decision to answer and the
    answer) replays the decision's call, or the answer after the decision to answer.
    """

    def __init__(self, decision: dict[str, Any]) -> None:
        self.decision = decision
        self.bodies: list[dict[str, Any]] = []

    def handle_chat_completions(
        self, body: dict[str, Any], on_chunk: Callable[[str], bool]
    ) -> None:
        self.bodies.append(body)
        if "grammar" in body and self.decision.get("action") != "call_tool":
            pieces = [prompts.ANSWER_MARK[:5], prompts.ANSWER_MARK[5:], "The product ", "is 437."]
            timings = TIMINGS | {"predicted_n": 4}
        elif "json_schema" in body or "grammar" in body:
            pieces = [json.dumps(self.decision)]
            timings = TIMINGS | {"draft_n": 10, "draft_n_accepted": 7}
        else:
            pieces = ["The product ", "is 437."]
            timings = TIMINGS | {"predicted_n": 2}
        for piece in pieces:
            on_chunk(json.dumps({"choices": [{"delta": {"content": piece}}]}))
        on_chunk(
            json.dumps(
                {
                    "choices": [{"delta": {}}],
                    "usage": {"prompt_tokens": 200, "completion_tokens": len(pieces)},
                    "timings": timings,
                }
            )
        )


def local_with(server: FakeServer, *, fold: bool = True) -> tuple[LocalLLM, list[CallRecord]]:
    records: list[CallRecord] = []
    llm = LocalLLM(on_call=records.append, fold_answer=fold)
    llm._server = server  # pyright: ignore[reportPrivateUsage]  # loaded: the fake runtime
    return llm, records


async def test_a_tool_turn_records_one_decision_tagged_with_the_agent_and_run() -> None:
    server = FakeServer(
        {"action": "call_tool", "tool": "calculator", "arguments": {"expression": "23 * 19"}}
    )
    llm, records = local_with(server)
    with structlog.contextvars.bound_contextvars(role="researcher", run_id="r-1"):
        events = await run(llm, [ChatMessage.user(QUESTION)], [CALCULATOR], LLMOptions())
    assert [e.name for e in events if isinstance(e, ToolCall)] == ["calculator"]
    assert len(records) == 1
    decision = records[0]
    assert (decision.kind, decision.run_id) == ("researcher.decision", "r-1")
    assert (decision.prompt_tokens, decision.prefill_tokens, decision.cached_tokens) == (
        200,
        20,
        180,
    )
    assert (decision.decode_tokens, decision.decode_tps) == (6, 20.0)
    assert (decision.draft_tokens, decision.draft_accepted) == (10, 7)
    assert decision.first_token_s is not None and decision.wall_s >= decision.first_token_s


async def test_an_answer_after_a_decision_is_its_own_record_and_every_body_asks_for_the_cache() -> (
    None
):
    server = FakeServer({"action": "answer"})
    llm, records = local_with(server)
    events = await run(llm, [ChatMessage.user(QUESTION)], [CALCULATOR], LLMOptions())
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "The product is 437."
    assert [r.kind for r in records] == ["decision", "answer"]  # no worker bound: no agent
    assert [r.decode_tokens for r in records] == [6, 2]
    assert all(body["cache_prompt"] is True for body in server.bodies)
    assert len(server.bodies) == 2


async def test_a_schema_answer_is_recorded_as_structured() -> None:
    server = FakeServer({"action": "answer"})
    llm, records = local_with(server)
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    await run(llm, [ChatMessage.user("Is 437 right?")], [], LLMOptions(response_schema=schema))
    assert [r.step for r in records] == ["structured"]


async def test_without_a_hook_nothing_is_recorded_and_the_answer_still_streams() -> None:
    server = FakeServer({"action": "answer"})
    llm = LocalLLM()
    llm._server = server  # pyright: ignore[reportPrivateUsage]
    events = await run(llm, [ChatMessage.user("Hi")], [], LLMOptions())
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "The product is 437."


def test_missing_timings_count_as_zero() -> None:
    r = record_of(
        {}, agent="", run_id="", step="answer", started=0.0, first_token_s=None, wall_s=1.0
    )
    assert (r.prompt_tokens, r.decode_tokens, r.decode_tps, r.draft_tokens) == (0, 0, 0.0, 0)
    assert r.as_dict()["kind"] == "answer"


def test_the_parallel_slots_each_get_the_whole_window() -> None:
    llm = LocalLLM(n_ctx=4096, n_parallel=4, draft="ngram")
    assert (llm.parallel, llm.context_tokens, llm.draft_name) == (4, 4096, "ngram")
    assert LocalLLM(n_parallel=0).parallel == 1
