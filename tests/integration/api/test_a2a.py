"""A2A at ``POST /a2a`` and the agent card, driven by the official ``a2a-sdk`` client."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncGenerator
from typing import Any

import httpx
import pytest
from a2a.client import Client, ClientConfig, create_client
from a2a.types import a2a_pb2 as a2a
from a2a.utils.errors import InvalidParamsError, TaskNotCancelableError, TaskNotFoundError
from google.protobuf import json_format

from agents.llm.scripted import BENCHMARK_ANSWER, ScriptedLLM
from bus.store import KeyRole


@contextlib.asynccontextmanager
async def connect(
    api: Any, key: str, *, streaming: bool = True, url: str | None = None
) -> AsyncGenerator[Client]:
    """The official client for the agent at ``api`` (or ``url``), as the holder of ``key``."""
    http = httpx.AsyncClient(headers=api.auth(key), timeout=60)
    config = ClientConfig(httpx_client=http, streaming=streaming)
    try:
        yield await create_client(url or api.base, config)
    finally:
        await http.aclose()


def question(text: str = "What is 23 × 19?", **fields: Any) -> a2a.SendMessageRequest:
    skill = fields.pop("skill", None)
    message = a2a.Message(
        message_id=fields.pop("message_id", uuid.uuid4().hex),
        role=a2a.ROLE_USER,
        parts=[a2a.Part(text=text)],
        **fields,
    )
    request = a2a.SendMessageRequest(message=message)
    if skill:
        request.metadata.update({"skill": skill})
    return request


async def send(client: Client, request: a2a.SendMessageRequest) -> list[a2a.StreamResponse]:
    return [update async for update in client.send_message(request)]


def answer_of(updates: list[a2a.StreamResponse]) -> str:
    chunks = [u.artifact_update for u in updates if u.HasField("artifact_update")]
    return "".join(p.text for c in chunks for p in c.artifact.parts)


def last_state(updates: list[a2a.StreamResponse]) -> int:
    return [u.status_update.status.state for u in updates if u.HasField("status_update")][-1]


async def stored(api: Any, key: str, run_id: str) -> dict[str, Any]:
    return (await api.http.get(f"/api/v1/runs/{run_id}", headers=api.auth(key))).json()


async def test_the_card_names_the_skills_and_the_endpoint(start_api: Any) -> None:
    api = await start_api()
    doc = (await api.http.get("/.well-known/agent-card.json")).json()
    card = json_format.ParseDict(doc, a2a.AgentCard())

    assert [s.id for s in card.skills] == ["single", "multi", "documents"]
    [interface] = card.supported_interfaces
    assert interface.url == f"{api.base}/a2a" and interface.protocol_binding == "JSONRPC"
    assert card.capabilities.streaming and "bearer" in card.security_schemes


async def test_a_client_given_the_endpoint_s_url_finds_the_same_card_there(
    start_api: Any,
) -> None:
    api = await start_api()
    key = await api.key()
    root = (await api.http.get("/.well-known/agent-card.json")).json()
    beside = await api.http.get("/a2a/.well-known/agent-card.json")  # no key: a public card
    async with connect(api, key, url=f"{api.base}/a2a") as client:
        updates = await send(client, question())

    assert beside.status_code == 200 and beside.json() == root
    assert answer_of(updates) == BENCHMARK_ANSWER


async def test_a_streamed_message_is_a_task_with_the_answer_as_its_artifact(
    start_api: Any,
) -> None:
    api = await start_api()
    key = await api.key()
    async with connect(api, key) as client:
        updates = await send(client, question())
        task_id = updates[0].task.id
        task = await client.get_task(a2a.GetTaskRequest(id=task_id))
    run = await stored(api, key, task_id)

    assert updates[0].task.status.state == a2a.TASK_STATE_WORKING
    assert last_state(updates) == a2a.TASK_STATE_COMPLETED
    assert answer_of(updates) == run["answer"] == BENCHMARK_ANSWER
    notes = [
        p.text
        for u in updates
        if u.HasField("status_update")
        for p in u.status_update.status.message.parts
    ]
    assert any("calculator" in n for n in notes)  # the tool step, as a status note
    assert task.status.state == a2a.TASK_STATE_COMPLETED
    assert [p.text for p in task.artifacts[0].parts] == [run["answer"]]
    assert task.context_id == run["conversation_id"]


async def test_an_unstreamed_message_answers_the_finished_task(start_api: Any) -> None:
    api = await start_api()
    key = await api.key()
    async with connect(api, key, streaming=False) as client:
        [reply] = await send(client, question(skill="multi"))
    run = await stored(api, key, reply.task.id)

    assert reply.task.status.state == a2a.TASK_STATE_COMPLETED and run["mode"] == "multi"
    assert reply.task.artifacts[0].parts[0].text == run["answer"]
    assert reply.task.metadata["verified"] == run["verified"]


async def test_a_gate_is_input_required_and_the_next_message_decides_it(
    start_api: Any,
) -> None:
    api = await start_api()
    admin = await api.key("t1", "root", KeyRole.ADMIN)
    await api.http.put("/api/v1/settings", json={"human_gate": True}, headers=api.auth(admin))
    key = await api.key("t1", "alice")
    async with connect(api, key) as client:
        paused = await send(client, question(skill="multi"))
        task_id = paused[0].task.id
        assert last_state(paused) == a2a.TASK_STATE_INPUT_REQUIRED
        assert (await stored(api, key, task_id))["status"] == "suspended"
        async with connect(api, await api.key("t1", "mallory")) as other:
            with pytest.raises(TaskNotFoundError):
                await other.get_task(a2a.GetTaskRequest(id=task_id))
        with pytest.raises(InvalidParamsError, match="approve, reject"):  # not a decision
            await send(client, question("maybe", task_id=task_id))
        resumed = await send(client, question("approve", task_id=task_id))
    run = await stored(api, key, task_id)

    assert last_state(resumed) == a2a.TASK_STATE_COMPLETED and run["status"] == "done"
    assert answer_of(resumed) == run["answer"]


async def test_cancel_stops_the_task(start_api: Any) -> None:
    api = await start_api(ScriptedLLM(token_delay=0.2))
    key = await api.key()
    async with connect(api, key, streaming=False) as client:
        request = question()
        request.configuration.return_immediately = True
        [reply] = await send(client, request)
        task = await client.cancel_task(a2a.CancelTaskRequest(id=reply.task.id))
        with pytest.raises(TaskNotCancelableError):  # it has ended: nothing left to cancel
            await client.cancel_task(a2a.CancelTaskRequest(id=reply.task.id))

    assert task.status.state == a2a.TASK_STATE_CANCELED
    assert (await stored(api, key, reply.task.id))["status"] == "cancelled"


async def test_errors_are_json_rpc_errors_with_a2a_codes(start_api: Any) -> None:
    api = await start_api()
    key = await api.key()

    async def call(method: str, params: Any, token: str = key) -> httpx.Response:
        body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
        return await api.http.post("/a2a", json=body, headers={"Authorization": f"Bearer {token}"})

    unknown = (await call("tasks/get", {"id": "nope"})).json()
    no_method = (await call("Nope", {})).json()
    no_text = (
        await call("SendMessage", {"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}})
    ).json()
    bad_skill = (
        await call("message/send", json_format.MessageToDict(question(skill="fast")))
    ).json()
    not_json = await api.http.post("/a2a", content=b"{", headers=api.auth(key))
    no_key = await call("GetTask", {"id": "x"}, token="ab_not_a_key_12345")

    assert unknown["id"] == 7 and unknown["error"]["code"] == -32001
    assert no_method["error"]["code"] == -32601
    assert no_text["error"]["code"] == -32602 and bad_skill["error"]["code"] == -32602
    assert not_json.json()["error"]["code"] == -32700
    assert (
        no_key.status_code == 401
        and no_key.json()["error"]["data"][0]["metadata"]["code"] == "unauthorized"
    )
