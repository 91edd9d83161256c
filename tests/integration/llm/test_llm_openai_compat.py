"""The OpenAI-compatible adapter against a real HTTP server started in the test."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator, Sequence

import pytest
from pydantic import SecretStr

from agents.errors import (
    LLMAuthError,
    LLMBadRequest,
    LLMBadResponse,
    LLMNotFound,
    LLMTimeout,
    LLMUnavailable,
)
from agents.llm.openai_compat import OpenAICompatConfig, OpenAICompatLLM
from agents.llm.ports import (
    INVALID_ARGUMENTS_KEY,
    LLM,
    ChatMessage,
    LLMOptions,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolDefinition,
    Usage,
)
from agents.llm.scripted import Turn, text, tool_call, turn
from tests.contracts.llm import (
    CALCULATOR,
    GREETING_ANSWER,
    QUESTION,
    LLMContract,
    joined,
    run,
)
from tests.integration.llm.fake_openai_server import Drop, FakeOpenAIServer, Raw, Stall, Status

HELLO = [ChatMessage.user("Say hello.")]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    fake = FakeOpenAIServer().start()
    yield fake
    fake.stop()


def make_llm(server: FakeOpenAIServer, **overrides: object) -> OpenAICompatLLM:
    settings: dict[str, object] = {
        "base_url": server.base_url,
        "api_key": SecretStr(server.api_key),
        "model": server.model,
        "think_param": "chat_template_kwargs",
        "backoff_s": 0.01,
        "read_timeout": 5.0,
    }
    settings.update(overrides)
    return OpenAICompatLLM(OpenAICompatConfig.model_validate(settings))


class TestOpenAICompatContract(LLMContract):
    """The adapter, over real HTTP, delivers the canonical turns unchanged."""

    @pytest.fixture
    async def llm(self, server: FakeOpenAIServer) -> AsyncIterator[LLM]:
        async with make_llm(server) as adapter:
            yield adapter


async def test_request_body_follows_the_openai_wire_format(server: FakeOpenAIServer) -> None:
    call = tool_call("calculator", {"expression": "23 * 19"}, id="call_9")
    messages = [
        ChatMessage.system("Be brief."),
        ChatMessage.user(QUESTION),
        ChatMessage.assistant("", [call]),
        ChatMessage.tool(call, "437"),
    ]
    options = LLMOptions(max_tokens=50, temperature=0.1, response_schema={"type": "object"})
    async with make_llm(server, extra_body={"top_k": 5}) as llm:
        await run(llm, messages, [CALCULATOR], options)
    sent = server.requests[0]
    body = sent["body"]
    assert sent["headers"]["Authorization"] == "Bearer test-key"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["messages"][2] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_9",
                "type": "function",
                "function": {"name": "calculator", "arguments": '{"expression": "23 * 19"}'},
            }
        ],
    }
    assert body["messages"][3] == {"role": "tool", "tool_call_id": "call_9", "content": "437"}
    assert body["tools"][0]["function"]["parameters"] == CALCULATOR.parameters
    assert body["response_format"]["json_schema"]["schema"] == {"type": "object"}
    assert (body["max_tokens"], body["temperature"], body["top_k"]) == (50, 0.1, 5)
    assert body["chat_template_kwargs"] == {"enable_thinking": False}


async def test_arguments_split_over_many_chunks_are_assembled(server: FakeOpenAIServer) -> None:
    arguments = {"expression": "(23 * 19) + 1", "note": "ünïcødé ✓", "nested": {"a": [1, 2]}}

    def two_calls(m: Sequence[ChatMessage], t: Sequence[ToolDefinition], o: LLMOptions) -> Turn:
        return turn(tool_call("calculator", arguments, id="a"), tool_call("current_time", id="b"))

    server.respond = two_calls
    server.argument_pieces = 9
    async with make_llm(server) as llm:
        events = await run(llm, [ChatMessage.user(QUESTION)], [CALCULATOR])
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("a", "calculator", arguments),
        ("b", "current_time", {}),
    ]


async def test_invalid_argument_json_is_kept_for_the_gateway_to_reject(
    server: FakeOpenAIServer,
) -> None:
    call = {"index": 0, "id": "c1", "function": {"name": "calculator", "arguments": '{"a": '}}
    chunks = [
        {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    server.plan.append(Raw([f"data: {json.dumps(c)}" for c in chunks] + ["data: [DONE]"]))
    async with make_llm(server) as llm:
        events = await run(llm, [ChatMessage.user(QUESTION)], [CALCULATOR])
    assert events[0] == ToolCall(
        id="c1", name="calculator", arguments={INVALID_ARGUMENTS_KEY: '{"a": '}
    )
    assert events[1] == Usage()


async def test_reasoning_under_the_reasoning_key_is_streamed(server: FakeOpenAIServer) -> None:
    server.reasoning_key = "reasoning"
    async with make_llm(server) as llm:
        events = await run(llm, HELLO, (), LLMOptions(think=True))
    assert isinstance(events[1], ReasoningDelta)
    assert joined(events, ReasoningDelta) and joined(events, TextDelta) == GREETING_ANSWER


async def test_429_is_retried_after_retry_after(server: FakeOpenAIServer) -> None:
    server.plan.append(Status(429, "slow down", headers={"Retry-After": "1"}))
    started = time.perf_counter()
    async with make_llm(server) as llm:
        events = await run(llm, HELLO)
    assert time.perf_counter() - started >= 0.9
    assert len(server.requests) == 2
    assert joined(events, TextDelta) == GREETING_ANSWER


async def test_5xx_and_dropped_streams_are_retried_with_backoff(server: FakeOpenAIServer) -> None:
    server.plan += [Status(503, "overloaded"), Drop(before=1), Status(502, "bad gateway")]
    async with make_llm(server) as llm:
        events = await run(llm, HELLO)
    assert len(server.requests) == 4
    assert joined(events, TextDelta) == GREETING_ANSWER


async def test_retries_give_up_with_llm_unavailable(server: FakeOpenAIServer) -> None:
    server.plan += [Status(500, "boom")] * 3
    async with make_llm(server, max_retries=2) as llm:
        with pytest.raises(LLMUnavailable, match="500: boom") as caught:
            await run(llm, HELLO)
    assert len(server.requests) == 3 and caught.value.retryable


async def test_a_long_retry_after_fails_at_once(server: FakeOpenAIServer) -> None:
    server.plan.append(Status(429, "quota", headers={"Retry-After": "3600"}))
    async with make_llm(server) as llm:
        with pytest.raises(LLMUnavailable, match="quota"):
            await run(llm, HELLO)
    assert len(server.requests) == 1


async def test_401_is_a_clear_auth_error_without_retry(server: FakeOpenAIServer) -> None:
    async with make_llm(server, api_key=SecretStr("wrong")) as llm:
        with pytest.raises(LLMAuthError, match="Incorrect API key") as caught:
            await run(llm, HELLO)
    assert len(server.requests) == 1
    assert caught.value.code == "llm_auth" and "AGENTBUS_LLM_API_KEY" in str(caught.value)


async def test_unknown_model_is_llm_not_found(server: FakeOpenAIServer) -> None:
    async with make_llm(server, model="no-such-model") as llm:
        with pytest.raises(LLMNotFound, match="no-such-model") as caught:
            await run(llm, HELLO)
    assert len(server.requests) == 1 and caught.value.code == "llm_model_not_found"


async def test_wrong_base_url_is_llm_not_found(server: FakeOpenAIServer) -> None:
    async with make_llm(server, base_url=server.base_url.removesuffix("/v1")) as llm:
        with pytest.raises(LLMNotFound, match="ends with /v1"):
            await run(llm, HELLO)


async def test_400_is_a_bad_request_without_retry(server: FakeOpenAIServer) -> None:
    server.plan.append(Status(400, "context length exceeded"))
    async with make_llm(server) as llm:
        with pytest.raises(LLMBadRequest, match="context length exceeded"):
            await run(llm, HELLO)
    assert len(server.requests) == 1


async def test_no_first_token_in_time_is_llm_timeout(server: FakeOpenAIServer) -> None:
    server.plan.append(Stall(seconds=5))
    async with make_llm(server, read_timeout=0.3) as llm:
        with pytest.raises(LLMTimeout, match=r"sent nothing for 0\.3s"):
            await run(llm, HELLO)
    assert len(server.requests) == 1


async def test_nothing_is_retried_once_a_token_was_yielded(server: FakeOpenAIServer) -> None:
    server.plan += [Stall(seconds=5, before=3), Drop(before=3)]
    seen: list[object] = []
    async with make_llm(server, read_timeout=0.3) as llm:
        with pytest.raises(LLMTimeout):
            async for event in llm.stream(HELLO):
                seen.append(event)
        assert len(seen) == 2 and len(server.requests) == 1
        with pytest.raises(LLMUnavailable, match="ended before"):
            await run(llm, HELLO)
    assert len(server.requests) == 2


async def test_refused_connection_is_retried_then_unavailable() -> None:
    closed = FakeOpenAIServer()
    url = closed.base_url
    closed.stop()  # the port is free again: connecting is refused
    config = OpenAICompatConfig(base_url=url, model="m", max_retries=2, backoff_s=0.01)
    async with OpenAICompatLLM(config) as llm:
        with pytest.raises(LLMUnavailable, match="connection to"):
            await run(llm, HELLO)


async def test_a_non_sse_answer_is_a_bad_response(server: FakeOpenAIServer) -> None:
    server.plan.append(Raw(['{"choices": []}'], content_type="application/json"))
    async with make_llm(server) as llm:
        with pytest.raises(LLMBadResponse, match="not an SSE stream"):
            await run(llm, HELLO)


async def test_tool_name_must_be_plain() -> None:
    with pytest.raises(ValueError, match="pattern"):
        ToolDefinition(name="bad name!")


async def test_scripted_answers_survive_the_wire(server: FakeOpenAIServer) -> None:
    def lines(m: Sequence[ChatMessage], t: Sequence[ToolDefinition], o: LLMOptions) -> Turn:
        return turn(text("line one\nline two\n\n  indented"))

    server.respond = lines
    async with make_llm(server) as llm:
        events = await run(llm, HELLO)
    assert joined(events, TextDelta) == "line one\nline two\n\n  indented"
