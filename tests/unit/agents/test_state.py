"""Shared agent state: usage, the reflection loop's retry, tool scope, tool results."""

from __future__ import annotations

import json

from agents import graph
from agents.llm.ports import ToolDefinition, Usage
from agents.state import (
    add_usage,
    another_attempt,
    own_calls,
    requests,
    retry_state,
    scoped_tools,
    tool_message,
    with_results,
)
from bus.commands import ToolCallResult
from bus.run_state import ChatMessage, JudgeProgress, Review, RunSettings, RunState, ToolCall

BASE = [ChatMessage.system("be careful"), ChatMessage.user("2+2?")]
TURNS = [
    ChatMessage.assistant("", [ToolCall(id="s2c0", name="calculator")]),
    ChatMessage(role="tool", tool_call_id="s2c0", name="calculator", content="{}"),
    ChatMessage.assistant("4"),
]


def test_usage_adds_up_overall_and_per_agent() -> None:
    total = add_usage({}, Usage(prompt_tokens=10, completion_tokens=2), "planner")
    total = add_usage(total, Usage(prompt_tokens=5, completion_tokens=5), "researcher")
    assert total == {
        "prompt_tokens": 15,
        "completion_tokens": 7,
        "planner_tokens": 12,
        "researcher_tokens": 10,
    }
    assert add_usage(total, None, "critic") is total


def test_a_retry_drops_the_researchers_turns_and_keeps_the_feedback() -> None:
    earlier = Review(agent="critic", verdict="REVISE", reason="first")
    state = RunState(
        question="2+2?",
        messages=[*BASE, *TURNS],
        base_len=len(BASE),
        draft="4",
        tool_hops=1,
        critiques=[earlier],
        judge=JudgeProgress(phase="done", findings="checked", hops=2),
    )
    feedback = Review(agent="verifier", verdict="needs_revision", reason="show the working")
    retried = retry_state(state, feedback)
    assert retried.messages == BASE
    assert (retried.attempts, retried.draft, retried.tool_hops) == (1, None, 0)
    assert retried.judge == JudgeProgress()  # the next draft gets a fresh fact-check
    assert retried.critiques == [earlier, feedback]
    assert retried.question == state.question and state.messages == [*BASE, *TURNS]


def test_a_retry_without_a_recorded_base_keeps_the_whole_thread() -> None:
    state = RunState(question="q", messages=BASE)
    assert retry_state(state, Review(agent="critic", verdict="REPLAN")).messages == BASE


def test_the_reflection_loop_allows_one_more_attempt() -> None:
    assert graph.MAX_ATTEMPTS == 2
    assert another_attempt(RunState(question="q"))
    assert not another_attempt(RunState(question="q", attempts=1))


TOOLS = [ToolDefinition(name="calculator"), ToolDefinition(name="current_time")]


def test_the_tools_offered_follow_the_run_settings() -> None:
    assert scoped_tools(TOOLS, RunSettings(use_tools=False)) == []
    assert scoped_tools(TOOLS, RunSettings(mode="multi")) == TOOLS
    scoped = RunSettings(mode="multi", researcher_tools=["current_time", "gone"])
    assert [t.name for t in scoped_tools(TOOLS, scoped)] == ["current_time"]
    # Single mode has no per-agent scope.
    assert scoped_tools(TOOLS, RunSettings(researcher_tools=[])) == TOOLS


def test_model_calls_get_deterministic_ids_and_become_gateway_requests() -> None:
    model = [ToolCall(id="call_x", name="calculator", arguments={"expression": "1"})]
    ours = own_calls(model, "s3")
    assert [c.id for c in ours] == ["s3c0"] and model[0].id == "call_x"
    [request] = requests(ours)
    assert (request.call_id, request.name, request.arguments) == (
        "s3c0",
        "calculator",
        ours[0].arguments,
    )


def test_results_become_tool_messages_the_model_reads_as_data() -> None:
    ok = ToolCallResult(call_id="c1", name="calculator", status="ok", code="ok", result=4)
    blocked = ToolCallResult(
        call_id="c2",
        name="web_search",
        status="egress_blocked",
        code="egress_blocked",
        message="not allowed",
        blocked_host="example.com",
    )
    thread = with_results(BASE, [ok, blocked])
    assert thread[: len(BASE)] == BASE
    first, second = thread[len(BASE) :]
    assert (first.role, first.tool_call_id, first.name) == ("tool", "c1", "calculator")
    assert json.loads(first.content) == {"status": "ok", "code": "ok", "result": 4}
    assert json.loads(second.content) == {
        "status": "egress_blocked",
        "code": "egress_blocked",
        "message": "not allowed",
        "blocked_host": "example.com",
    }
    assert tool_message(ok) == first
