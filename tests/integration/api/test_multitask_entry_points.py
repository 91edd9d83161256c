"""``interrupt`` and ``rollback`` on every entry point besides REST and the websocket.

Both questions come through the entry point under test, as its user would send them:
``runs.questions`` (the replies on the publisher's ``reply_to`` stream), the
OpenAI-compatible endpoint (the official SDK, header ``X-Agentbus-Multitask``), A2A
(``metadata.multitask``), AG-UI (``forwardedProps.multitask``) and MCP (the ``ask`` tool's
``multitask``). Each test checks what that user would: how the first request ended, the
first run's status and code, what the second answer saw, and the stored conversation.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncGenerator
from typing import Any

import httpx
import httpx2
import openai
import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import a2a_pb2 as a2a
from ag_ui.core import (
    BaseEvent,
    Event,
    RunAgentInput,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    TextMessageContentEvent,
    UserMessage,
)
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextContent
from openai.types.chat import ChatCompletionMessageParam
from pydantic import TypeAdapter

from bus import keys
from bus.commands import RunResult
from tests.integration.api.conftest import Api, StartApi
from tests.integration.api.multitask import (
    PADDING,
    ended,
    messages,
    release_once_cut,
    run_of,
    said,
    slow_model,
    until_event,
)
from tests.support import wait_for

POLICIES = ["interrupt", "rollback"]


def check_after(
    policy: str, first: dict[str, Any], second_answer: str, stored: list[dict[str, Any]]
) -> None:
    """What a user finds once q2 cut q1 short: q1 cancelled with the policy's code, what
    q2's answer saw, and the conversation (q1's partial answer kept marked, or q1 gone)."""
    assert first["status"] == "cancelled"
    if policy == "interrupt":
        assert first["error_code"] == "interrupted"
        assert second_answer.split(" .")[0] == "A[q2] saw[q1] cut"
        assert [(m["role"], m["content"][:2], m.get("status")) for m in stored] == [
            ("user", "q1", None),
            ("assistant", "A[", "interrupted"),
            ("user", "q2", None),
            ("assistant", "A[", None),
        ]
        partial, full = stored[1]["content"], "A[q1] saw[]" + " ." * PADDING
        assert full.startswith(partial.strip()) and len(partial) < len(full)
        return
    assert first["error_code"] == "rolled_back"
    assert second_answer.split(" .")[0] == "A[q2] saw[]"
    assert said(stored) == [("user", "q2", None), ("assistant", "A[q2] saw[]", None)]


async def only_run(api: Api, key: str) -> str:
    """The id of the key's one run, once it streams its answer."""
    found: list[str] = []

    async def listed() -> bool:
        runs = (await api.http.get("/api/v1/runs", headers=api.auth(key))).json()["runs"]
        found[:] = [r["id"] for r in runs]
        return bool(found)

    await wait_for(listed, within=20, interval=0.05)
    [run_id] = found
    await until_event(api, run_id, "answer")
    return run_id


async def run_ids(api: Api, key: str) -> list[str]:
    runs = (await api.http.get("/api/v1/runs", headers=api.auth(key))).json()["runs"]
    return sorted(r["id"] for r in runs)


@pytest.mark.parametrize("policy", POLICIES)
async def test_runs_questions_cuts_the_running_question_short_and_replies_for_both(
    start_api: StartApi, policy: str
) -> None:
    api = await start_api(model := slow_model())
    key = await api.key()
    conversation = f"crm-{uuid.uuid4().hex[:8]}"

    async def publish(run_id: str, question: str, **settings: str) -> None:
        entry = {
            "api_key": key,
            "question": question,
            "conversation_id": conversation,
            "run_id": run_id,
            "reply_to": "crm",
            "settings": settings,
        }
        await api.redis.xadd(keys.QUESTIONS_STREAM, {"data": json.dumps(entry)})

    await publish("crm-q1", "q1")
    await until_event(api, "crm-q1", "answer")
    await publish("crm-q2", "q2", multitask=policy)
    await release_once_cut(api, model, "crm-q1")

    async def replied() -> bool:
        return await api.redis.xlen("crm") >= 2

    await wait_for(replied, within=40)
    rows = await api.redis.xrange("crm")
    replies = {r.run_id: r for r in (RunResult.model_validate_json(f[b"data"]) for _, f in rows)}
    first, second = replies["crm-q1"], replies["crm-q2"]

    code = {"interrupt": "interrupted", "rollback": "rolled_back"}[policy]
    assert (first.status, first.stop_reason, first.answer) == ("cancelled", code, None)
    assert first.conversation_id == conversation  # the publisher can tell which thread
    assert second.status == "done" and second.conversation_id == conversation
    check_after(
        policy,
        await run_of(api, key, "crm-q1"),
        second.answer or "",
        await messages(api, key, conversation),
    )
    assert len(rows) == 2  # one reply per question, nothing for the cancelled one twice


def oai(api: Api, key: str, **options: Any) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=api.base + "/v1", api_key=key, **options)


@pytest.mark.parametrize("policy", POLICIES)
async def test_the_openai_endpoint_cuts_a_streamed_completion_short(
    start_api: StartApi, policy: str
) -> None:
    api = await start_api(model := slow_model())
    key = await api.key()
    q1: list[ChatCompletionMessageParam] = [{"role": "user", "content": "q1"}]
    q2: list[ChatCompletionMessageParam] = [{"role": "user", "content": "q2"}]
    received: list[str] = []
    async with oai(api, key) as client:
        stream = await client.chat.completions.with_raw_response.create(
            model="agentbus", messages=q1, stream=True, user="u1"
        )
        first_id = stream.headers["x-agentbus-run"]
        chunks = stream.parse()

        async def read_first() -> None:
            async for chunk in chunks:
                if chunk.choices:
                    received.append(chunk.choices[0].delta.content or "")

        reading = asyncio.create_task(read_first())
        await until_event(api, first_id, "answer")
        replying = asyncio.ensure_future(  # an Awaitable, not a coroutine
            client.chat.completions.with_raw_response.create(
                model="agentbus",
                messages=q2,
                user="u1",
                extra_headers={"X-Agentbus-Multitask": policy},
            )
        )
        await release_once_cut(api, model, first_id)
        reply = await replying
        with pytest.raises(openai.APIError) as cut:
            await asyncio.wait_for(reading, 30)

    completion = reply.parse()
    conversation = reply.headers["x-agentbus-conversation"]
    assert cut.value.code == "run_cancelled" and first_id in cut.value.message
    assert "".join(received).startswith("A[q1]")  # the first client saw its partial answer
    check_after(
        policy,
        await ended(api, key, first_id),
        completion.choices[0].message.content or "",
        await messages(api, key, conversation),
    )
    if policy == "interrupt":  # what the first client was shown is what the history keeps
        stored = (await messages(api, key, conversation))[1]["content"]
        assert "".join(received).strip() == stored.strip()


async def test_an_interrupted_completion_is_a_409_the_sdk_does_not_retry(
    start_api: StartApi,
) -> None:
    api = await start_api(model := slow_model())
    key = await api.key()
    async with oai(api, key, max_retries=2) as client:  # the SDK's default retries
        first = asyncio.create_task(
            client.chat.completions.create(
                model="agentbus", messages=[{"role": "user", "content": "q1"}], user="u1"
            )
        )
        q1 = await only_run(api, key)
        asking = asyncio.create_task(
            client.chat.completions.create(
                model="agentbus",
                messages=[{"role": "user", "content": "q2"}],
                user="u1",
                extra_headers={"X-Agentbus-Multitask": "interrupt"},
            )
        )
        await release_once_cut(api, model, q1)
        second = await asking
        with pytest.raises(openai.ConflictError) as refused:
            await asyncio.wait_for(first, 30)

    assert refused.value.status_code == 409 and refused.value.code == "run_cancelled"
    assert refused.value.response.headers["x-should-retry"] == "false"
    assert (second.choices[0].message.content or "").startswith("A[q2] saw[q1] cut")
    assert len(await run_ids(api, key)) == 2  # q1 was not asked again behind q2
    assert (await run_of(api, key, q1))["error_code"] == "interrupted"


@contextlib.asynccontextmanager
async def a2a_client(api: Api, key: str) -> AsyncGenerator[Any]:
    http = httpx.AsyncClient(headers=api.auth(key), timeout=60)
    try:
        yield await create_client(api.base, ClientConfig(httpx_client=http, streaming=True))
    finally:
        await http.aclose()


def a2a_message(text: str, context: str, **metadata: str) -> a2a.SendMessageRequest:
    message = a2a.Message(
        message_id=uuid.uuid4().hex,
        role=a2a.ROLE_USER,
        parts=[a2a.Part(text=text)],
        context_id=context,
    )
    request = a2a.SendMessageRequest(message=message)
    if metadata:
        request.metadata.update(metadata)
    return request


def states(updates: list[a2a.StreamResponse]) -> list[int]:
    return [u.status_update.status.state for u in updates if u.HasField("status_update")]


def artifact_text(updates: list[a2a.StreamResponse]) -> str:
    chunks = [u.artifact_update for u in updates if u.HasField("artifact_update")]
    return "".join(p.text for c in chunks for p in c.artifact.parts)


@pytest.mark.parametrize("policy", POLICIES)
async def test_a2a_metadata_multitask_cuts_the_contexts_running_task_short(
    start_api: StartApi, policy: str
) -> None:
    api = await start_api(model := slow_model())
    key = await api.key()
    context = f"ctx-{uuid.uuid4().hex[:8]}"
    async with a2a_client(api, key) as client:
        first_updates: list[a2a.StreamResponse] = []

        async def first_task() -> None:
            async for update in client.send_message(a2a_message("q1", context)):
                first_updates.append(update)

        reading = asyncio.create_task(first_task())
        q1 = await only_run(api, key)
        asked = a2a_message("q2", context, multitask=policy)
        second_updates: list[a2a.StreamResponse] = []

        async def second_task() -> None:
            async for update in client.send_message(asked):
                second_updates.append(update)

        asking = asyncio.create_task(second_task())
        await release_once_cut(api, model, q1)
        await asking
        await asyncio.wait_for(reading, 30)

    assert first_updates[0].task.id == q1
    assert states(first_updates)[-1] == a2a.TASK_STATE_CANCELED
    assert states(second_updates)[-1] == a2a.TASK_STATE_COMPLETED
    check_after(
        policy,
        await run_of(api, key, q1),
        artifact_text(second_updates),
        await messages(api, key, context),
    )


async def test_a2a_refuses_an_unknown_multitask(start_api: StartApi) -> None:
    api = await start_api(slow_model())
    key = await api.key()
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "message/send",
        "params": {
            "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "q"}]},
            "metadata": {"multitask": "later"},
        },
    }
    resp = await api.http.post("/a2a", json=body, headers=api.auth(key))

    error = resp.json()["error"]
    assert error["code"] == -32602 and "metadata.multitask" in error["message"]
    assert await run_ids(api, key) == []


AG_UI_EVENTS: TypeAdapter[Any] = TypeAdapter(Event)


def ag_ui_input(question: str, thread: str, **props: str) -> dict[str, Any]:
    given = RunAgentInput(
        thread_id=thread,
        run_id=f"r-{uuid.uuid4().hex[:12]}",
        state=None,
        messages=[UserMessage(id="m1", role="user", content=question)],
        tools=[],
        context=[],
        forwarded_props=props,
    )
    return given.model_dump(mode="json", by_alias=True, exclude_none=True)


async def ag_ui(api: Api, key: str, body: dict[str, Any]) -> tuple[int, list[BaseEvent]]:
    """The status and the decoded events of one AG-UI request."""
    found: list[BaseEvent] = []
    async with api.http.stream(
        "POST", "/api/v1/ag-ui", json=body, headers=api.auth(key), timeout=60
    ) as response:
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                found.append(AG_UI_EVENTS.validate_json(line.removeprefix("data: ")))
    return response.status_code, found


def ag_ui_text(found: list[BaseEvent]) -> str:
    return "".join(e.delta for e in found if isinstance(e, TextMessageContentEvent))


@pytest.mark.parametrize("policy", POLICIES)
async def test_ag_ui_forwarded_multitask_cuts_the_threads_running_run_short(
    start_api: StartApi, policy: str
) -> None:
    api = await start_api(model := slow_model())
    key = await api.key()
    thread = f"t-{uuid.uuid4().hex[:8]}"
    first = asyncio.create_task(ag_ui(api, key, ag_ui_input("q1", thread)))
    q1 = await only_run(api, key)
    asking = asyncio.create_task(ag_ui(api, key, ag_ui_input("q2", thread, multitask=policy)))
    await release_once_cut(api, model, q1)
    status, second_events = await asking
    _, first_events = await asyncio.wait_for(first, 30)

    finished = first_events[-1]
    assert isinstance(finished, RunFinishedEvent)
    assert isinstance(finished.outcome, RunFinishedCancelledOutcome)
    assert ag_ui_text(first_events).startswith("A[q1]")
    assert status == 200 and isinstance(second_events[-1], RunFinishedEvent)
    check_after(
        policy,
        await run_of(api, key, q1),
        ag_ui_text(second_events),
        await messages(api, key, thread),
    )


@contextlib.asynccontextmanager
async def mcp_client(api: Api, key: str) -> AsyncGenerator[Client]:
    """The official MCP client on the API's ``/mcp``, as the holder of ``key``."""
    async with (
        httpx2.AsyncClient(headers=api.auth(key), timeout=httpx2.Timeout(30, read=120)) as http,
        Client(streamable_http_client(f"{api.base}/mcp", http_client=http), cache=None) as client,
    ):
        yield client


@pytest.mark.parametrize("policy", POLICIES)
async def test_the_mcp_ask_tool_cuts_the_conversations_running_run_short(
    start_api: StartApi, policy: str
) -> None:
    api = await start_api(model := slow_model())
    key = await api.key()
    conversation = f"mcp-{uuid.uuid4().hex[:8]}"
    async with mcp_client(api, key) as one, mcp_client(api, key) as other:
        ask = {"question": "q1", "conversation_id": conversation}
        first = asyncio.create_task(one.call_tool("ask", ask))
        q1 = await only_run(api, key)
        ask = {"question": "q2", "conversation_id": conversation, "multitask": policy}
        asking = asyncio.create_task(other.call_tool("ask", ask))
        await release_once_cut(api, model, q1)
        second = await asking
        cut = await asyncio.wait_for(first, 30)

    [said_first] = [c.text for c in cut.content if isinstance(c, TextContent)]
    assert cut.is_error and "cancelled" in said_first
    assert not second.is_error and second.structured_content is not None
    check_after(
        policy,
        await run_of(api, key, q1),
        second.structured_content["answer"],
        await messages(api, key, conversation),
    )
