"""``ask`` as an MCP 2025-11-25 task, over real HTTP in raw JSON-RPC (the official ``mcp``
client has no tasks): the run is the task, polled, cancelled and fetched later."""

from __future__ import annotations

import json
from typing import Any

from agents.llm.scripted import BENCHMARK_ANSWER, ScriptedLLM
from bus.store import KeyRole
from tests.support import wait_for

HEADERS = {
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-11-25",
}


async def call(api: Any, key: str, method: str, params: dict[str, Any] | None = None) -> Any:
    """One JSON-RPC request to ``/mcp``; its answer (the result, or the error object)."""
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
    if params is not None:
        body["params"] = params
    reply = await api.http.post("/mcp", json=body, headers=HEADERS | api.auth(key), timeout=60)
    assert reply.status_code == 200, reply.text
    [data] = [line[6:] for line in reply.text.splitlines() if line.startswith("data: ")]
    doc = json.loads(data)
    return doc.get("result", doc.get("error"))


def ask(question: str = "What is 23 × 19?", **arguments: Any) -> dict[str, Any]:
    return {"name": "ask", "arguments": {"question": question, **arguments}, "task": {}}


async def test_ask_as_a_task_is_polled_then_its_result_fetched(start_api: Any) -> None:
    api = await start_api()
    key = await api.key()
    init = await call(
        api,
        key,
        "initialize",
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    )
    tools = await call(api, key, "tools/list")
    created = (await call(api, key, "tools/call", ask()))["task"]
    task_id = created["taskId"]

    async def completed() -> bool:
        return (await call(api, key, "tasks/get", {"taskId": task_id}))["status"] == "completed"

    await wait_for(completed, within=60, interval=0.1)
    result = await call(api, key, "tasks/result", {"taskId": task_id})
    run = (await api.http.get(f"/api/v1/runs/{task_id}", headers=api.auth(key))).json()
    too_late = await call(api, key, "tasks/cancel", {"taskId": task_id})

    assert init["capabilities"]["tasks"]["requests"] == {"tools": {"call": {}}}
    [ask_tool] = [t for t in tools["tools"] if t["name"] == "ask"]
    assert ask_tool["execution"] == {"taskSupport": "optional"}
    assert created["status"] == "working" and created["pollInterval"] > 0
    assert result["structuredContent"]["answer"] == BENCHMARK_ANSWER == run["answer"]
    assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
    assert too_late["code"] == -32602 and "terminal" in too_late["message"]


async def test_cancelling_the_task_cancels_the_run(start_api: Any) -> None:
    api = await start_api(ScriptedLLM(token_delay=0.2))
    key = await api.key()
    task_id = (await call(api, key, "tools/call", ask()))["task"]["taskId"]

    cancelled = await call(api, key, "tasks/cancel", {"taskId": task_id})
    result = await call(api, key, "tasks/result", {"taskId": task_id})
    run = (await api.http.get(f"/api/v1/runs/{task_id}", headers=api.auth(key))).json()

    assert cancelled["status"] == "cancelled" and run["status"] == "cancelled"
    assert result["isError"] is True and "cancelled" in result["content"][0]["text"]


async def test_a_gated_task_is_input_required_until_resume_decides_it(start_api: Any) -> None:
    api = await start_api()
    admin = await api.key("t1", "root", KeyRole.ADMIN)
    await api.http.put("/api/v1/settings", json={"human_gate": True}, headers=api.auth(admin))
    key = await api.key("t1", "alice")
    task_id = (await call(api, key, "tools/call", ask(mode="multi")))["task"]["taskId"]

    async def waiting() -> bool:
        task = await call(api, key, "tasks/get", {"taskId": task_id})
        return task["status"] == "input_required"

    await wait_for(waiting, within=60, interval=0.1)
    paused = await call(api, key, "tasks/get", {"taskId": task_id})
    gate = await call(api, key, "tasks/result", {"taskId": task_id})
    resume = {"name": "resume", "arguments": {"run_id": task_id, "decision": "approve"}}
    await call(api, key, "tools/call", resume)
    final = await call(api, key, "tasks/result", {"taskId": task_id})
    done = await call(api, key, "tasks/get", {"taskId": task_id})

    assert "resume" in paused["statusMessage"]
    assert gate["isError"] is True and "paused at a gate" in gate["content"][0]["text"]
    assert done["status"] == "completed" and not final.get("isError")


async def test_only_the_owner_reaches_a_task_and_other_tools_take_no_task(start_api: Any) -> None:
    api = await start_api()
    alice, bob = await api.key("t1", "alice"), await api.key("t1", "bob")
    task_id = (await call(api, alice, "tools/call", ask()))["task"]["taskId"]

    bobs = await call(api, bob, "tasks/get", {"taskId": task_id})
    unknown = await call(api, alice, "tasks/result", {"taskId": "no-such-task"})
    search = {"name": "search_docs", "arguments": {"query": "x"}, "task": {}}
    refused = await call(api, alice, "tools/call", search)
    bad = await call(api, alice, "tools/call", ask(question=""))

    assert bobs["code"] == -32602 and "not found" in bobs["message"]
    assert unknown["code"] == -32602
    assert refused["code"] == -32601
    assert bad["code"] == -32602
