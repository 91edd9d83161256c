"""A2A tasks over real HTTP: ListTasks, GetTask's history, SubscribeToTask, and the
JSON-RPC envelope's error codes."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from a2a.client import Client
from a2a.types import a2a_pb2 as a2a
from a2a.utils.errors import (
    InvalidParamsError,
    UnsupportedOperationError,
)

from agents.llm.scripted import BENCHMARK_ANSWER, ScriptedLLM
from bus.store import KeyRole
from tests.integration.api.test_a2a import answer_of, connect, last_state, question, send


async def rpc(api: Any, key: str | None, body: object) -> dict[str, Any]:
    """POST ``body`` (any JSON) to ``/a2a``; the JSON answer."""
    headers = api.auth(key) if key else {}
    reply = await api.http.post("/a2a", json=body, headers=headers)
    assert reply.status_code == 200
    return reply.json()


async def ask(client: Client, text: str = "What is 23 × 19?", **fields: Any) -> str:
    """Send a question and wait for its task to end; the task id."""
    [reply] = await send(client, question(text, **fields))
    return reply.task.id


async def listed(client: Client, **fields: Any) -> a2a.ListTasksResponse:
    return await client.list_tasks(a2a.ListTasksRequest(**fields))


@pytest.mark.parametrize(
    ("body", "code", "echoed"),
    [
        ({"jsonrpc": "2.0", "id": "a", "params": {}}, -32600, "a"),  # no method
        ({"jsonrpc": "2.0", "id": "b", "method": 7}, -32600, "b"),  # method not a string
        ({"jsonrpc": "1.0", "id": "c", "method": "GetTask"}, -32600, "c"),  # wrong version
        ({"jsonrpc": "2.0", "id": {"bad": 1}, "method": "GetTask"}, -32600, None),  # id object
        ({"jsonrpc": "2.0", "id": True, "method": "GetTask"}, -32600, None),  # id a bool
        ([{"jsonrpc": "2.0", "id": 1, "method": "GetTask"}], -32600, None),  # a batch
        ({"jsonrpc": "2.0", "id": 9, "method": "tasks/nope"}, -32601, 9),
        ({"jsonrpc": "2.0", "id": 10, "method": "GetTask", "params": [1]}, -32602, 10),
        ({"jsonrpc": "2.0", "id": 11, "method": "SendMessage", "params": {"": 1}}, -32602, 11),
    ],
)
async def test_a_call_that_is_not_a_valid_request_gets_json_rpc_s_code(
    start_api: Any, body: object, code: int, echoed: object
) -> None:
    api = await start_api()
    answer = await rpc(api, await api.key(), body)

    assert answer["error"]["code"] == code and answer["id"] == echoed
    assert answer["jsonrpc"] == "2.0" and "result" not in answer


async def test_there_is_no_extended_card(start_api: Any) -> None:
    api = await start_api()
    extended = {"jsonrpc": "2.0", "id": 2, "method": "GetExtendedAgentCard"}

    no_card = await rpc(api, await api.key(), extended)

    assert no_card["error"]["code"] == -32004


async def test_list_tasks_shows_the_callers_own_tasks_only(start_api: Any) -> None:
    api = await start_api()
    alice, bob = await api.key("t1", "alice"), await api.key("t1", "bob")
    admin = await api.key("t1", "root", KeyRole.ADMIN)
    async with connect(api, alice, streaming=False) as client:
        mine = await ask(client)
        alices = await listed(client)
    async with connect(api, bob, streaming=False) as client:
        bobs_task = await ask(client)
        bobs = await listed(client)
    async with connect(api, admin, streaming=False) as client:
        admins = await listed(client)
    other_tenant = await rpc(
        api, await api.key("t2", "alice"), {"jsonrpc": "2.0", "id": 1, "method": "ListTasks"}
    )

    assert [t.id for t in alices.tasks] == [mine] and alices.total_size == 1
    assert [t.id for t in bobs.tasks] == [bobs_task]
    assert list(admins.tasks) == [] and admins.total_size == 0
    assert other_tenant["result"]["tasks"] == [] and other_tenant["result"]["totalSize"] == 0


async def test_list_tasks_pages_newest_update_first_with_filters(start_api: Any) -> None:
    api = await start_api()
    key = await api.key()
    async with connect(api, key, streaming=False) as client:
        first = await ask(client, context_id="talk-1")
        second = await ask(client, context_id="talk-1")
        third = await ask(client)
        page = await listed(client, page_size=2)
        rest = await listed(client, page_size=2, page_token=page.next_page_token)
        in_talk = await listed(client, context_id="talk-1")
        completed = await listed(client, status=a2a.TASK_STATE_COMPLETED)
        working = await listed(client, status=a2a.TASK_STATE_WORKING)
        with pytest.raises(InvalidParamsError):
            await listed(client, page_token="not-a-token")
        with pytest.raises(InvalidParamsError):
            await listed(client, page_size=101)

    assert [t.id for t in page.tasks] == [third, second] and page.total_size == 3
    assert [t.id for t in rest.tasks] == [first] and rest.next_page_token == ""
    assert [t.id for t in in_talk.tasks] == [second, first]
    assert len(completed.tasks) == 3 and list(working.tasks) == []
    # No artifacts unless asked; each task says when its status last changed.
    assert all(not t.artifacts and t.status.HasField("timestamp") for t in page.tasks)


async def test_an_unknown_state_in_list_tasks_is_invalid_params(start_api: Any) -> None:
    api = await start_api()
    body = {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {"status": "DONE"}}

    answer = await rpc(api, await api.key(), body)

    assert answer["error"]["code"] == -32602


async def test_get_task_history_is_the_question_then_the_answer(start_api: Any) -> None:
    api = await start_api()
    async with connect(api, await api.key(), streaming=False) as client:
        task_id = await ask(client, "What is 23 × 19?")
        full = await client.get_task(a2a.GetTaskRequest(id=task_id))
        last = await client.get_task(a2a.GetTaskRequest(id=task_id, history_length=1))
        none = await client.get_task(a2a.GetTaskRequest(id=task_id, history_length=0))
        listed_with = await listed(client, history_length=1, include_artifacts=True)

    assert [m.role for m in full.history] == [a2a.ROLE_USER, a2a.ROLE_AGENT]
    assert [m.parts[0].text for m in full.history] == ["What is 23 × 19?", BENCHMARK_ANSWER]
    assert [m.parts[0].text for m in last.history] == [BENCHMARK_ANSWER]
    assert list(none.history) == []
    [task] = listed_with.tasks
    assert len(task.history) == 1 and task.artifacts[0].parts[0].text == BENCHMARK_ANSWER


async def test_subscribe_joins_a_running_task_and_streams_it_to_the_end(
    start_api: Any,
) -> None:
    api = await start_api(ScriptedLLM(token_delay=0.05))
    key = await api.key()
    async with connect(api, key) as client:
        request = question()
        request.configuration.return_immediately = True
        async with connect(api, key, streaming=False) as plain:
            [started] = await send(plain, request)
        task_id = started.task.id
        updates = [u async for u in client.subscribe(a2a.SubscribeToTaskRequest(id=task_id))]
        with pytest.raises(UnsupportedOperationError):  # it has ended: nothing to follow
            [u async for u in client.subscribe(a2a.SubscribeToTaskRequest(id=task_id))]
    run = (await api.http.get(f"/api/v1/runs/{task_id}", headers=api.auth(key))).json()

    first = updates[0].task
    assert first.id == task_id and first.status.state != a2a.TASK_STATE_COMPLETED
    assert last_state(updates) == a2a.TASK_STATE_COMPLETED
    # What was written before the subscription rides in the first task; the rest follows.
    so_far = "".join(p.text for a in first.artifacts for p in a.parts)
    assert so_far + answer_of(updates) == run["answer"] == BENCHMARK_ANSWER


async def test_subscribing_to_another_users_task_is_task_not_found(start_api: Any) -> None:
    api = await start_api()
    async with connect(api, await api.key("t1", "alice"), streaming=False) as client:
        task_id = await ask(client)
    body = {"jsonrpc": "2.0", "id": 3, "method": "SubscribeToTask", "params": {"id": task_id}}

    answer = await rpc(api, await api.key("t1", "mallory"), body)
    no_key = await api.http.post("/a2a", json=body)

    assert answer["error"]["code"] == -32001
    assert no_key.status_code == httpx.codes.UNAUTHORIZED


async def test_a_bad_history_length_is_refused_before_any_run_starts(start_api: Any) -> None:
    api = await start_api()
    key = await api.key()
    message = {"messageId": "m-neg", "role": "ROLE_USER", "parts": [{"text": "Hi?"}]}
    params = {"message": message, "configuration": {"historyLength": -1}}
    body = {"jsonrpc": "2.0", "id": 12, "method": "SendMessage", "params": params}

    answer = await rpc(api, key, body)
    await asyncio.sleep(1.5)  # a run started anyway would be admitted and listed by now
    runs = (await api.http.get("/api/v1/runs", headers=api.auth(key))).json()

    assert answer["error"]["code"] == -32602 and runs["runs"] == []
