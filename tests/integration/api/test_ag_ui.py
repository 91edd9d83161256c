"""``POST /api/v1/ag-ui``, its stream decoded with the official ``ag-ui-protocol`` models."""

from __future__ import annotations

import json
import uuid
from typing import Any

from ag_ui.core import (
    BaseEvent,
    Event,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
    StateSnapshotEvent,
    TextMessageContentEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    UserMessage,
)
from pydantic import TypeAdapter

from agents.llm.scripted import BENCHMARK_ANSWER
from bus.store import KeyRole

EVENTS: TypeAdapter[Any] = TypeAdapter(Event)


def run_input(question: str = "What is 23 × 19?", **fields: Any) -> dict[str, Any]:
    given = RunAgentInput(
        thread_id=fields.pop("thread_id", f"t-{uuid.uuid4().hex[:12]}"),
        run_id=fields.pop("run_id", f"r-{uuid.uuid4().hex[:12]}"),
        state=None,
        messages=[UserMessage(id="m1", role="user", content=question)],
        tools=[],
        context=[],
        forwarded_props=fields.pop("forwarded_props", {}),
        **fields,
    )
    return given.model_dump(mode="json", by_alias=True, exclude_none=True)


async def post(api: Any, key: str, body: dict[str, Any]) -> tuple[int, list[BaseEvent]]:
    """The status and the decoded events of one AG-UI request."""
    events: list[BaseEvent] = []
    async with api.http.stream(
        "POST", "/api/v1/ag-ui", json=body, headers=api.auth(key), timeout=60
    ) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                events.append(EVENTS.validate_json(line.removeprefix("data: ")))
    return response.status_code, events


def error_code(events: list[BaseEvent]) -> str | None:
    """The code of a response that is one RUN_ERROR event, as every refusal is."""
    [error] = events
    assert isinstance(error, RunErrorEvent)
    return error.code


def text_of(events: list[BaseEvent]) -> str:
    return "".join(e.delta for e in events if isinstance(e, TextMessageContentEvent))


async def stored(api: Any, key: str, run_id: str) -> dict[str, Any]:
    return (await api.http.get(f"/api/v1/runs/{run_id}", headers=api.auth(key))).json()


async def test_a_single_mode_run_streams_its_answer_and_tool_steps(start_api: Any) -> None:
    api = await start_api()
    key = await api.key()
    body = run_input()
    status, events = await post(api, key, body)

    first, last = events[0], events[-1]
    assert status == 200 and isinstance(first, RunStartedEvent)
    assert (first.thread_id, first.run_id) == (body["threadId"], body["runId"])
    run_id = (first.metadata or {})["agentbus_run_id"]
    run = await stored(api, key, run_id)
    kinds = [str(e.type.value) for e in events]
    assert kinds.index("TOOL_CALL_START") < kinds.index("TOOL_CALL_RESULT")
    assert kinds.index("TEXT_MESSAGE_START") < kinds.index("TEXT_MESSAGE_END") < len(kinds) - 1
    [call] = [e for e in events if isinstance(e, ToolCallStartEvent)]
    [result] = [e for e in events if isinstance(e, ToolCallResultEvent)]
    assert call.tool_call_name == "calculator" and result.tool_call_id == call.tool_call_id
    assert "437" in str(result.content)
    assert text_of(events) == run["answer"] == BENCHMARK_ANSWER
    assert isinstance(last, RunFinishedEvent) and last.outcome is not None
    assert last.outcome.type == "success" and (last.result or {})["answer"] == run["answer"]
    assert run["conversation_id"] == body["threadId"]
    # Another user naming that thread does not join the conversation.
    bob = await api.key(subject="bob")
    status, refused = await post(api, bob, run_input(thread_id=body["threadId"]))
    assert (status, error_code(refused)) == (404, "conversation_not_found")


async def test_multi_mode_sends_plan_and_verdicts_as_state_and_the_checked_answer(
    start_api: Any,
) -> None:
    api = await start_api()
    key = await api.key()
    props = {"mode": "multi", "accuracy": "accurate"}
    _, events = await post(api, key, run_input(forwarded_props=props))

    run_id = (events[0].metadata or {})["agentbus_run_id"]
    run = await stored(api, key, run_id)
    snapshots = [e.snapshot for e in events if isinstance(e, StateSnapshotEvent)]
    assert snapshots and snapshots[0]["plan"] and snapshots[-1]["verdicts"]
    assert "REASONING_MESSAGE_CONTENT" in [e.type for e in events]  # the drafts, as reasoning
    assert run["mode"] == "multi" and text_of(events) == run["answer"]
    finished = events[-1]
    assert isinstance(finished, RunFinishedEvent)
    assert (finished.result or {})["verified"] == run["verified"]


async def test_a_gate_is_an_interrupt_and_the_resume_comes_back_through_the_protocol(
    start_api: Any,
) -> None:
    api = await start_api()
    admin = await api.key("t1", "root", KeyRole.ADMIN)
    await api.http.put("/api/v1/settings", json={"human_gate": True}, headers=api.auth(admin))
    key = await api.key("t1", "alice")
    body = run_input(forwarded_props={"mode": "multi"})
    _, events = await post(api, key, body)

    paused = events[-1]
    assert isinstance(paused, RunFinishedEvent)
    assert isinstance(paused.outcome, RunFinishedInterruptOutcome)
    [gate] = paused.outcome.interrupts
    run_id = (events[0].metadata or {})["agentbus_run_id"]
    assert gate.reason == "approve_answer" and gate.id == f"{run_id}:approve_answer"
    assert (await stored(api, key, run_id))["status"] == "suspended"

    # Another user cannot decide it; the owner can, and the stream goes on from the gate.
    resume = {"interruptId": gate.id, "status": "resolved", "payload": {"decision": "approve"}}
    intruder = await api.key("t1", "mallory")
    status, refused = await post(api, intruder, {**run_input(), "resume": [resume]})
    assert status in (403, 404) and isinstance(refused[0], RunErrorEvent)
    status, resumed = await post(api, key, {**body, "resume": [resume]})
    run = await stored(api, key, run_id)
    assert status == 200 and run["status"] == "done"
    assert isinstance(resumed[0], RunStartedEvent)
    sent = [e.type for e in resumed]
    assert "TOOL_CALL_START" in [e.type for e in events] and "TOOL_CALL_START" not in sent
    assert text_of(resumed) == run["answer"] and isinstance(resumed[-1], RunFinishedEvent)
    assert resumed[-1].outcome is not None and resumed[-1].outcome.type == "success"


async def test_posting_the_same_input_again_follows_the_same_run(start_api: Any) -> None:
    api = await start_api()
    key = await api.key()
    body = run_input()
    _, first = await post(api, key, body)
    _, again = await post(api, key, body)  # a client reconnecting
    _, other = await post(api, key, run_input(thread_id=body["threadId"]))  # a new run

    ids = [(e[0].metadata or {})["agentbus_run_id"] for e in (first, again, other)]
    assert ids[0] == ids[1] != ids[2]
    assert [e.type for e in again] == [e.type for e in first]
    assert text_of(again) == text_of(first)


async def test_bad_requests_get_a_run_error_under_the_rest_status(start_api: Any) -> None:
    api = await start_api(api_rate_per_minute=1, api_rate_burst=1)
    key = await api.key()
    cases = {
        "no key": ("ab_not_a_key_12345", run_input()),
        "not AG-UI": (key, {"threadId": "t1"}),
        "no user message": (key, run_input() | {"messages": []}),
        "a bad mode": (key, run_input(forwarded_props={"mode": "fast"})),
        "a bad thread id": (key, run_input(thread_id="a b/c")),
        "a foreign interrupt": (
            key,
            run_input()
            | {
                "resume": [
                    {
                        "interruptId": "x:approve_answer",
                        "status": "resolved",
                        "payload": {"decision": "approve"},
                    }
                ]
            },
        ),
    }
    answers = {name: await post(api, k, b) for name, (k, b) in cases.items()}
    await post(api, key, run_input())
    limited = await post(api, key, run_input())

    codes = {name: (status, error_code(events)) for name, (status, events) in answers.items()}
    assert codes["no key"][0] == 401
    assert codes["not AG-UI"] == (422, "invalid_request")
    assert codes["no user message"] == (422, "invalid_request")
    assert codes["a bad mode"] == (422, "invalid_request")
    assert codes["a bad thread id"] == (422, "invalid_request")
    assert codes["a foreign interrupt"][0] == 404
    assert (limited[0], error_code(limited[1])) == (429, "rate_limited")
    assert json.loads(EVENTS.dump_json(limited[1][0]))["type"] == "RUN_ERROR"
