"""A local model asking for a call it already has the result of gets to answer instead.

Against the fake runtime of `test_llm_local_calls`: the decision it replays is fixed, so
what changes the outcome is the thread the decision sees.
"""

from __future__ import annotations

import json
from typing import Any

from agents.llm.ports import ChatMessage, LLMOptions, TextDelta, ToolCall, ToolDefinition
from agents.llm.tool_repeats import MAX_CALLS_PER_TOOL, repeats_a_call, still_offered
from tests.contracts.llm import CALCULATOR, QUESTION, run
from tests.unit.agents.llm.test_llm_local_calls import FakeServer, local_with

CALL = {"action": "call_tool", "tool": "calculator", "arguments": {"expression": "23 * 19"}}
CLOCK = ToolDefinition(name="current_time", description="The time.", parameters={})


def answered(name: str, arguments: dict[str, Any], n: int) -> list[ChatMessage]:
    """An assistant's call of ``name`` and its result, as the researcher's thread holds them."""
    call = ToolCall(id=f"c{n}", name=name, arguments=arguments)
    return [ChatMessage.assistant("", [call]), ChatMessage.tool(call, "437")]


async def test_a_call_repeating_one_already_answered_is_answered_instead() -> None:
    server = FakeServer(CALL)
    llm, _ = local_with(server)
    thread = [ChatMessage.user(QUESTION), *answered("calculator", {"expression": "23 * 19"}, 1)]
    events = await run(llm, thread, [CALCULATOR], LLMOptions())
    assert not [e for e in events if isinstance(e, ToolCall)]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "The product is 437."


async def test_the_same_tool_with_new_arguments_is_still_called() -> None:
    llm, _ = local_with(FakeServer(CALL))
    thread = [ChatMessage.user(QUESTION), *answered("calculator", {"expression": "23 + 19"}, 1)]
    events = await run(llm, thread, [CALCULATOR], LLMOptions())
    assert [e.arguments for e in events if isinstance(e, ToolCall)] == [{"expression": "23 * 19"}]


async def test_a_used_up_tool_leaves_the_grammar_but_not_the_prompt() -> None:
    server = FakeServer({"action": "answer"})
    llm, _ = local_with(server, fold=False)
    thread = [ChatMessage.user(QUESTION)]
    for n in range(MAX_CALLS_PER_TOOL):
        thread += answered("calculator", {"expression": f"{n} + 1"}, n)
    await run(llm, thread, [CALCULATOR, CLOCK], LLMOptions())
    decision = next(b for b in server.bodies if "json_schema" in b)
    offered = [
        v["properties"].get("tool", {}).get("const") for v in decision["json_schema"]["anyOf"]
    ]
    assert offered == [None, "current_time"]
    assert "calculator" in json.dumps(decision["messages"])


async def test_folded_a_used_up_tool_leaves_the_grammar_but_not_the_prompt() -> None:
    server = FakeServer({"action": "answer"})
    llm, _ = local_with(server)
    thread = [ChatMessage.user(QUESTION)]
    for n in range(MAX_CALLS_PER_TOOL):
        thread += answered("calculator", {"expression": f"{n} + 1"}, n)
    events = await run(llm, thread, [CALCULATOR, CLOCK], LLMOptions())
    [folded] = server.bodies
    assert '"current_time"' in folded["grammar"] and '"calculator"' not in folded["grammar"]
    assert "calculator" in json.dumps(folded["messages"])
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "The product is 437."


def test_calls_of_earlier_questions_do_not_count() -> None:
    earlier = [ChatMessage.user("before"), *answered("calculator", {"expression": "1"}, 0)]
    for n in range(1, MAX_CALLS_PER_TOOL):
        earlier += answered("calculator", {"expression": "1"}, n)
    thread = [*earlier, ChatMessage.assistant("2"), ChatMessage.user(QUESTION)]
    assert [t.name for t in still_offered(thread, [CALCULATOR])] == ["calculator"]
    assert not repeats_a_call(
        thread, ToolCall(id="x", name="calculator", arguments={"expression": "1"})
    )


async def test_with_every_tool_used_up_the_model_answers_without_a_decision() -> None:
    server = FakeServer(CALL)
    llm, _ = local_with(server)
    thread = [ChatMessage.user(QUESTION)]
    for n in range(MAX_CALLS_PER_TOOL):
        thread += answered("calculator", {"expression": f"{n} + 1"}, n)
    events = await run(llm, thread, [CALCULATOR], LLMOptions())
    assert not [b for b in server.bodies if "json_schema" in b]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "The product is 437."


class Decisions(FakeServer):
    """Replays one decision per request, in order (the last one from then on)."""

    def __init__(self, *decisions: dict[str, Any]) -> None:
        super().__init__(decisions[0])
        self._next = list(decisions)

    def handle_chat_completions(self, body: dict[str, Any], on_chunk: Any) -> None:
        self.decision = self._next.pop(0) if len(self._next) > 1 else self._next[0]
        super().handle_chat_completions(body, on_chunk)


async def test_a_required_call_that_repeats_is_decided_again_without_that_tool() -> None:
    output = ToolDefinition(
        name="final_result",
        description="The output.",
        parameters={"type": "object", "properties": {"response": {"type": "integer"}}},
    )
    final = {"action": "call_tool", "tool": "final_result", "arguments": {"response": 437}}
    server = Decisions(CALL, final)
    llm, _ = local_with(server)
    thread = [ChatMessage.user(QUESTION), *answered("calculator", {"expression": "23 * 19"}, 1)]
    events = await run(llm, thread, [CALCULATOR, output], LLMOptions(require_tool=True))
    [first, second] = [b["json_schema"] for b in server.bodies]
    offered = [[v["properties"]["tool"]["const"] for v in s["anyOf"]] for s in (first, second)]
    assert [(e.name, e.arguments) for e in events if isinstance(e, ToolCall)] == [
        ("final_result", {"response": 437})
    ]
    assert offered == [["calculator", "final_result"], ["final_result"]]
    assert not [e for e in events if isinstance(e, TextDelta)]
