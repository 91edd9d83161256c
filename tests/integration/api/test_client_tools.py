"""Tools the client declares (OpenAI ``tools``), driven by the official `openai` package
against a real API, real workers and the scripted model: the run pauses when the model
calls one, the client is sent the call, and its ``tool`` message resumes the run."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import openai
import pytest
from openai.types.chat import (
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionMessageParam,
)

from agents.llm.ports import ChatMessage, LLMOptions, ToolDefinition
from agents.llm.scripted import ScriptedLLM, Turn, text, tool_call, turn
from bus.store import Scope
from tests.integration.api.conftest import recv
from tests.support import wait_for

WEATHER: ChatCompletionFunctionToolParam = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city, now.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}
QUESTION: list[ChatCompletionMessageParam] = [
    {"role": "user", "content": "What is the weather in Paris?"}
]


class WeatherModel:
    """Calls the client's ``get_weather`` when it is offered (with ``args``), then answers
    with what the tool's result said; it keeps the tools it was offered."""

    def __init__(self, args: dict[str, Any] | None = None) -> None:
        self.offered: list[list[str]] = []
        self.results: list[str] = []
        self._args = args if args is not None else {"city": "Paris"}

    def __call__(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ) -> Turn:
        self.offered.append([t.name for t in tools])
        last = messages[-1]
        if last.role == "tool":
            body = json.loads(last.content)
            self.results.append(body["status"])
            said = body["result"]["content"] if body["status"] == "ok" else body["message"]
            return turn(text(f"In Paris it is {said}."))
        if any(t.name == "get_weather" for t in tools):
            return turn(tool_call("get_weather", self._args))
        return turn(text("I cannot tell the weather."))


def client(api: Any, key: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=api.base + "/v1", api_key=key, max_retries=0)


async def test_a_client_tool_call_pauses_the_run_and_its_result_resumes_it(
    start_api: Any,
) -> None:
    model = WeatherModel()
    api = await start_api(ScriptedLLM(model))
    key = await api.key()
    async with client(api, key) as oai:
        first = await oai.chat.completions.create(
            model="agentbus", messages=QUESTION, tools=[WEATHER]
        )
        choice = first.choices[0]
        calls = choice.message.tool_calls or []
        run = first.id.removeprefix("chatcmpl-")
        paused = await api.http.get(f"/api/v1/runs/{run}", headers=api.auth(key))
        answered = await oai.chat.completions.create(
            model="agentbus",
            messages=[
                *QUESTION,
                choice.message.model_dump(exclude_none=True),  # type: ignore[list-item]
                {"role": "tool", "tool_call_id": calls[0].id, "content": "18 °C and sunny"},
            ],
            tools=[WEATHER],
        )

    assert choice.finish_reason == "tool_calls"
    functions = [c.function for c in calls if isinstance(c, ChatCompletionMessageFunctionToolCall)]
    assert [(f.name, json.loads(f.arguments)) for f in functions] == [
        ("get_weather", {"city": "Paris"})
    ]
    assert paused.json()["status"] == "suspended"  # durably: the run waits in the store
    assert answered.choices[0].finish_reason == "stop"
    assert answered.choices[0].message.content == "In Paris it is 18 °C and sunny."
    assert answered.id == first.id  # the same run, resumed
    # Offered first, then the gateway's own tools (a small model favours the first it reads).
    assert model.offered[0][0] == "get_weather" and "calculator" in model.offered[0]

    async def audited() -> list[tuple[str, str]]:
        rows = await api.stores.audit.list(Scope.user("t1", "alice"), run_id=run)
        return [(r.tool, r.status) for r in reversed(rows)]

    # Both legs went through the gateway's chain, and its audit log: the call, then the result.
    await wait_for(lambda: _has_two(audited))
    assert await audited() == [("get_weather", "client_pending"), ("get_weather", "ok")]


async def _has_two(rows: Callable[[], Awaitable[list[tuple[str, str]]]]) -> bool:
    return len(await rows()) == 2


async def test_results_must_answer_exactly_the_calls_the_run_waits_for(start_api: Any) -> None:
    api = await start_api(ScriptedLLM(WeatherModel()))
    key = await api.key()
    async with client(api, key) as oai:
        first = await oai.chat.completions.create(
            model="agentbus", messages=QUESTION, tools=[WEATHER]
        )
        run = first.id.removeprefix("chatcmpl-")
        with pytest.raises(openai.BadRequestError) as wrong:
            await oai.chat.completions.create(
                model="agentbus",
                messages=[
                    *QUESTION,
                    {"role": "tool", "tool_call_id": f"{run}:s9c9", "content": "x"},
                ],
            )
        other = await api.key(subject="bob")
        async with client(api, other) as bob:
            with pytest.raises(openai.NotFoundError):  # another user's run is not found
                await bob.chat.completions.create(
                    model="agentbus",
                    messages=[
                        *QUESTION,
                        {"role": "tool", "tool_call_id": f"{run}:s2c0", "content": "x"},
                    ],
                )
        paused = await api.http.get(f"/api/v1/runs/{run}", headers=api.auth(key))

    assert wrong.value.status_code == 400
    assert "no result for" in wrong.value.message and "s9c9" in wrong.value.message
    assert paused.json()["status"] == "suspended"  # neither used the gate up


async def test_a_streamed_completion_hands_over_the_call_and_streams_the_rest(
    start_api: Any,
) -> None:
    api = await start_api(ScriptedLLM(WeatherModel()))
    key = await api.key()
    async with client(api, key) as oai:
        stream = await oai.chat.completions.create(
            model="agentbus", messages=QUESTION, tools=[WEATHER], stream=True
        )
        chunks = [c async for c in stream]
        calls = [t for c in chunks if c.choices for t in c.choices[0].delta.tool_calls or []]
        finish = [c.choices[0].finish_reason for c in chunks if c.choices]
        resumed = await oai.chat.completions.create(
            model="agentbus",
            messages=[
                *QUESTION,
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": calls[0].id or "",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": calls[0].id or "", "content": "rain"},
            ],
            tools=[WEATHER],
            stream=True,
        )
        rest = [c async for c in resumed]

    assert [c.function.name for c in calls if c.function] == ["get_weather"]
    assert finish[-1] == "tool_calls"
    text_after = "".join(c.choices[0].delta.content or "" for c in rest if c.choices)
    assert text_after == "In Paris it is rain."
    assert [c.choices[0].finish_reason for c in rest if c.choices][-1] == "stop"


async def test_a_client_tool_never_shadows_a_server_tool(start_api: Any) -> None:
    api = await start_api(ScriptedLLM(WeatherModel()))
    key = await api.key()
    calculator: ChatCompletionFunctionToolParam = {
        "type": "function",
        "function": {"name": "calculator", "parameters": {"type": "object"}},
    }
    async with client(api, key) as oai:
        with pytest.raises(openai.BadRequestError) as taken:
            await oai.chat.completions.create(
                model="agentbus", messages=QUESTION, tools=[calculator]
            )
    assert taken.value.status_code == 400
    assert taken.value.code == "tool_name_taken"
    assert taken.value.param == "tools[0].function.name"
    listed = await api.http.get("/api/v1/runs", headers=api.auth(key))
    assert listed.json()["runs"] == []  # refused before anything started


async def test_arguments_that_break_the_declared_schema_go_back_to_the_model(
    start_api: Any,
) -> None:
    model = WeatherModel(args={"town": "Paris"})  # not the declared parameters
    api = await start_api(ScriptedLLM(model))
    key = await api.key()
    async with client(api, key) as oai:
        done = await oai.chat.completions.create(
            model="agentbus", messages=QUESTION, tools=[WEATHER]
        )
    # The gateway's input-schema check refused the call: the client was never asked, and
    # the model read the refusal.
    assert done.choices[0].finish_reason == "stop"
    assert model.results == ["refused"] or model.results == ["error"]
    assert "city" in (done.choices[0].message.content or "")


async def test_a_result_for_a_call_agentbus_did_not_send_is_refused(start_api: Any) -> None:
    api = await start_api(ScriptedLLM(WeatherModel()))
    key = await api.key()
    async with client(api, key) as oai:
        with pytest.raises(openai.BadRequestError) as foreign:
            await oai.chat.completions.create(
                model="agentbus",
                messages=[*QUESTION, {"role": "tool", "tool_call_id": "call_123", "content": "x"}],
            )
    assert foreign.value.param == "messages"


async def test_rest_and_the_websocket_say_where_a_client_tool_s_results_go(
    start_api: Any,
) -> None:
    api = await start_api(ScriptedLLM(WeatherModel()))
    key = await api.key()
    async with client(api, key) as oai:
        first = await oai.chat.completions.create(
            model="agentbus", messages=QUESTION, tools=[WEATHER]
        )
    run = first.id.removeprefix("chatcmpl-")
    rest = await api.http.post(
        f"/api/v1/runs/{run}/resume", json={"decision": "approve"}, headers=api.auth(key)
    )
    conn = await api.ws(key)
    await conn.send(json.dumps({"type": "resume", "run_id": run, "decision": "approve"}))
    frame = await recv(conn)
    while frame["type"] != "request_error":
        frame = await recv(conn)
    still = await api.http.get(f"/api/v1/runs/{run}", headers=api.auth(key))

    error = rest.json()["error"]
    assert rest.status_code == 422 and error["code"] == frame["code"] == "bad_decision"
    assert "tool results, not a decision" in error["message"]
    assert "tool message for each call (OpenAI)" in error["hint"] == frame["hint"]
    assert still.json()["status"] == "suspended"  # the gate is not used up
