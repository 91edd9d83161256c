"""A2A push notifications over real HTTP: the official client sets configs, and a receiver
in its own process gets the task's updates, signed, with the config's token and auth."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from a2a.types import a2a_pb2 as a2a
from a2a.utils.errors import TaskNotFoundError
from google.protobuf import json_format
from standardwebhooks.webhooks import Webhook

from agents.llm.scripted import BENCHMARK_ANSWER
from bus.store import KeyRole
from tests.integration.api.test_a2a import connect, last_state, question, send
from tests.integration.api.test_a2a_tasks import rpc
from tests.support import wait_for

RECEIVER = Path(__file__).with_name("push_receiver.py")
HOOKS = {"webhook_private_hosts": "127.0.0.1", "webhook_backoff_s": 0.2}


class Receiver:
    """The receiver process: its URL and what it has been sent."""

    def __init__(self, port: int, out: Path) -> None:
        self.url = f"http://127.0.0.1:{port}/a2a-hook"
        self.out = out

    def seen(self) -> list[dict[str, Any]]:
        if not self.out.exists():
            return []
        return [json.loads(line) for line in self.out.read_text().splitlines()]

    async def wait_for(self, count: int) -> list[dict[str, Any]]:
        async def enough() -> bool:
            return len(self.seen()) >= count

        await wait_for(enough, within=60, interval=0.05)
        return self.seen()


@pytest.fixture
async def receiver(tmp_path: Path) -> AsyncIterator[Receiver]:
    out = tmp_path / "seen.jsonl"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(RECEIVER), str(out), stdout=asyncio.subprocess.PIPE
    )
    assert proc.stdout is not None
    port = int(await asyncio.wait_for(proc.stdout.readline(), 20))
    try:
        yield Receiver(port, out)
    finally:
        proc.kill()
        await proc.wait()


async def tenant(api: Any, **prefs: Any) -> tuple[str, str]:
    """The webhook secret and a user key of tenant t1, whose webhooks may reach 127.0.0.1."""
    admin = await api.key("t1", "root", KeyRole.ADMIN)
    prefs = {"egress_enabled": True, "egress_hosts": ["127.0.0.1"], **prefs}
    put = await api.http.put("/api/v1/settings", json=prefs, headers=api.auth(admin))
    assert put.status_code == 200, put.text
    got = await api.http.get("/api/v1/settings/webhook-secret", headers=api.auth(admin))
    return got.json()["secret"], await api.key("t1", "alice")


def pushed(seen: dict[str, Any], secret: str) -> a2a.StreamResponse:
    """A notification's body, once its Standard Webhooks signature is verified."""
    Webhook(secret).verify(seen["body"], seen["headers"])
    return json_format.Parse(seen["body"], a2a.StreamResponse())


def config(url: str, **fields: Any) -> a2a.TaskPushNotificationConfig:
    auth = a2a.AuthenticationInfo(scheme="Bearer", credentials="receiver-secret")
    return a2a.TaskPushNotificationConfig(url=url, token="tok-1", authentication=auth, **fields)


async def test_a_message_s_push_config_gets_the_finished_task_signed_with_token_and_auth(
    start_api: Any, receiver: Receiver
) -> None:
    api = await start_api(**HOOKS)
    secret, alice = await tenant(api)
    ask = question()
    ask.configuration.task_push_notification_config.CopyFrom(config(receiver.url))
    async with connect(api, alice, streaming=False) as client:
        [reply] = await send(client, ask)
        task_id = reply.task.id
        listed = await client.list_task_push_notification_configs(
            a2a.ListTaskPushNotificationConfigsRequest(task_id=task_id)
        )
    [seen] = await receiver.wait_for(1)
    body = pushed(seen, secret)

    assert seen["headers"]["x-a2a-notification-token"] == "tok-1"
    assert seen["headers"]["authorization"] == "Bearer receiver-secret"
    assert body.task.id == task_id and body.task.status.state == a2a.TASK_STATE_COMPLETED
    assert body.task.artifacts[0].parts[0].text == BENCHMARK_ANSWER
    assert body.task.context_id == reply.task.context_id
    [kept] = listed.configs
    assert kept.url == receiver.url and kept.task_id == task_id and kept.id
    assert kept.authentication.scheme == "Bearer" and not kept.authentication.credentials


async def test_a_gated_task_pushes_input_required_then_the_end_to_a_config_made_later(
    start_api: Any, receiver: Receiver
) -> None:
    api = await start_api(**HOOKS)
    secret, alice = await tenant(api, human_gate=True)
    first = question(skill="multi")
    first.configuration.task_push_notification_config.CopyFrom(config(receiver.url))
    async with connect(api, alice) as client:
        paused = await send(client, first)
        task_id = paused[0].task.id
        [gate] = await receiver.wait_for(1)
        later = await client.create_task_push_notification_config(
            config(receiver.url + "?later", id="later", task_id=task_id)
        )
        resumed = await send(client, question("approve", task_id=task_id))
    seen = await receiver.wait_for(3)
    ends = sorted((s["path"], pushed(s, secret)) for s in seen[1:])

    assert last_state(paused) == a2a.TASK_STATE_INPUT_REQUIRED
    update = pushed(gate, secret).status_update
    assert update.task_id == task_id and update.status.state == a2a.TASK_STATE_INPUT_REQUIRED
    assert "approve or reject" in update.status.message.parts[0].text
    assert later.id == "later" and last_state(resumed) == a2a.TASK_STATE_COMPLETED
    assert [path for path, _ in ends] == ["/a2a-hook", "/a2a-hook?later"]
    assert all(b.task.status.state == a2a.TASK_STATE_COMPLETED for _, b in ends)


async def test_config_methods_answer_with_a2a_s_codes(start_api: Any) -> None:
    api = await start_api(**HOOKS)
    _, alice = await tenant(api)
    bob = await api.key("t1", "bob")
    async with connect(api, alice, streaming=False) as client:
        [reply] = await send(client, question())
        task_id = reply.task.id
        made = await client.create_task_push_notification_config(
            config("http://127.0.0.1:9/hook", task_id=task_id, id="c1")
        )
        got = await client.get_task_push_notification_config(
            a2a.GetTaskPushNotificationConfigRequest(task_id=task_id, id="c1")
        )
        for _ in range(2):  # deleting is idempotent
            await client.delete_task_push_notification_config(
                a2a.DeleteTaskPushNotificationConfigRequest(task_id=task_id, id="c1")
            )
        with pytest.raises(TaskNotFoundError):
            await client.get_task_push_notification_config(
                a2a.GetTaskPushNotificationConfigRequest(task_id=task_id, id="c1")
            )

    def create(params: dict[str, Any]) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": 1, "method": "CreateTaskPushNotificationConfig"} | {
            "params": params
        }

    card = (await api.http.get("/.well-known/agent-card.json")).json()
    bobs = await rpc(api, bob, create({"taskId": task_id, "url": "http://127.0.0.1:9/h"}))
    nowhere = await rpc(api, alice, create({"taskId": "no-such", "url": "http://127.0.0.1:9/"}))
    no_url = await rpc(api, alice, create({"taskId": task_id}))
    off_list = await rpc(api, alice, create({"taskId": task_id, "url": "https://example.com/h"}))
    old_name = await rpc(
        api,
        alice,
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tasks/pushNotificationConfig/set",
            "params": {"taskId": task_id, "pushNotificationConfig": {"url": "http://127.0.0.1:9/"}},
        },
    )

    assert card["capabilities"]["pushNotifications"] is True
    assert made.id == "c1" and made.task_id == task_id and got.url == "http://127.0.0.1:9/hook"
    assert bobs["error"]["code"] == -32001 and nowhere["error"]["code"] == -32001
    assert "not found" in nowhere["error"]["message"]
    assert no_url["error"]["code"] == -32602 and off_list["error"]["code"] == -32602
    assert "egress allowlist" in off_list["error"]["message"]
    assert old_name["result"]["url"] == "http://127.0.0.1:9/" and old_name["result"]["id"]


async def test_a_deployment_without_push_says_so_and_answers_each_config_method_minus_32003(
    start_api: Any,
) -> None:
    api = await start_api(a2a_push_notifications=False)
    key = await api.key()
    async with connect(api, key, streaming=False) as client:
        [reply] = await send(client, question())
    task_id = reply.task.id
    target = {"taskId": task_id, "url": "http://127.0.0.1:9/hook", "id": "c1"}
    params = {
        "CreateTaskPushNotificationConfig": target,
        "GetTaskPushNotificationConfig": {"taskId": task_id, "id": "c1"},
        "ListTaskPushNotificationConfigs": {"taskId": task_id},
        "DeleteTaskPushNotificationConfig": {"taskId": task_id, "id": "c1"},
        "tasks/pushNotificationConfig/set": {
            "taskId": task_id,
            "pushNotificationConfig": {"url": "http://127.0.0.1:9/hook"},
        },
    }
    answers = {
        method: await rpc(api, key, {"jsonrpc": "2.0", "id": 1, "method": method, "params": p})
        for method, p in params.items()
    }
    with_config = question("Something else?")
    with_config.configuration.task_push_notification_config.url = "http://127.0.0.1:9/hook"
    sent = await rpc(
        api,
        key,
        {"jsonrpc": "2.0", "id": 2, "method": "SendMessage"}
        | {"params": json_format.MessageToDict(with_config)},
    )
    listed = await rpc(api, key, {"jsonrpc": "2.0", "id": 3, "method": "ListTasks", "params": {}})
    card = (await api.http.get("/.well-known/agent-card.json")).json()

    assert card["capabilities"].get("pushNotifications", False) is False
    assert {m: a["error"]["code"] for m, a in answers.items()} == dict.fromkeys(params, -32003)
    assert (
        "pushNotifications: false"
        in answers["tasks/pushNotificationConfig/set"]["error"]["message"]
    )
    assert sent["error"]["code"] == -32003
    assert [t["id"] for t in listed["result"]["tasks"]] == [task_id]  # no run was started
