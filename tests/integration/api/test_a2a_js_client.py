"""The official A2A JavaScript SDK (``@a2a-js/sdk``) against ``POST /a2a``: it sends a
question, joins the running task (``resubscribeTask``), lists the caller's tasks
(``listTasks``) and reads the task's history, and sets push notification configs, as a Node
agent would."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from agents.llm.scripted import BENCHMARK_ANSWER, ScriptedLLM
from tests.integration.api.test_a2a_push import HOOKS, Receiver, pushed, receiver, tenant

CLIENT = Path(__file__).parents[2] / "clients" / "a2a_js"
SUBMITTED, WORKING, COMPLETED, USER, AGENT = 1, 2, 3, 1, 2  # the SDK's TaskState and Role numbers


def need_the_js_sdk() -> str:
    """The node binary; skips (saying how to fix it) without node or the installed SDK."""
    node = shutil.which("node")
    if node is None or not (CLIENT / "node_modules" / "@a2a-js" / "sdk").is_dir():
        pytest.skip("node or @a2a-js/sdk is missing: `make node-clients` installs the SDK")
    return node


async def run_client(
    node: str, base: str, key: str, *extra: str, script: str = "client.mjs"
) -> dict[str, Any]:
    proc = await asyncio.create_subprocess_exec(
        node,
        str(CLIENT / script),
        base,
        key,
        *extra,
        cwd=CLIENT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()
    return json.loads(out)


async def test_the_js_sdk_resubscribes_to_a_running_task_and_lists_tasks(
    start_api: Any,
) -> None:
    node = need_the_js_sdk()
    api = await start_api(ScriptedLLM(token_delay=0.05))
    key = await api.key("t1", "alice")
    other = await api.key("t1", "bob")  # bob's task is never listed to alice
    await api.http.post("/api/v1/runs", json={"question": "2 + 2?"}, headers=api.auth(other))
    seen = await run_client(node, api.base, key)

    assert seen["kinds"][0] == "task" and seen["firstState"] in (SUBMITTED, WORKING)
    assert "artifactUpdate" in seen["kinds"] and seen["lastState"] == COMPLETED
    assert seen["listed"] == [seen["taskId"]] and seen["totalSize"] == 1
    assert seen["history"] == [[USER, "What is 23 × 19?"], [AGENT, BENCHMARK_ANSWER]]
    assert seen["afterEnd"] == "JsonRpcUnsupportedOperationError"  # it has ended


async def test_the_js_sdk_sets_push_configs_and_the_receiver_gets_the_task(
    start_api: Any, receiver: Receiver
) -> None:
    node = need_the_js_sdk()
    api = await start_api(**HOOKS)
    secret, alice = await tenant(api)
    seen = await run_client(node, api.base, alice, receiver.url, script="push.mjs")
    [hook] = await receiver.wait_for(1)
    body = pushed(hook, secret)

    assert seen["made"] == ["js-2", seen["taskId"], receiver.url]
    assert seen["got"] == ["js-2", "token-js-2", "Bearer", ""]  # credentials never repeated
    assert len(seen["listed"]) == 2 and "js-2" in seen["listed"]
    assert seen["afterDelete"] == "JsonRpcTaskNotFoundError"
    assert body.task.id == seen["taskId"] and body.task.status.state == COMPLETED
    assert hook["headers"]["authorization"] == "Bearer js-secret"


__all__ = ["receiver"]  # the fixture, imported for the test above
