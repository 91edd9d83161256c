"""The MCP server, driven by the official ``mcp`` client: over streamable HTTP at ``/mcp`` of
a real API with its workers, and over stdio through ``agentbus mcp`` (a child process)."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import INVALID_PARAMS, INVALID_REQUEST, CallToolResult, TextContent

from agents.llm.ports import ChatMessage, LLMOptions, ToolDefinition
from agents.llm.scripted import BENCHMARK_ANSWER, ScriptedLLM, Turn, text, tool_call, turn
from api.http.mcp_tools import INSTRUCTIONS
from bus.store import KeyRole
from retrieval.embedders.hashing import HashingEmbedder
from retrieval.ingest import prepare
from retrieval.loaders import parse
from retrieval.settings import RetrievalSettings
from retrieval.stack import Retrieval, open_retrieval
from tests.integration.api.conftest import Api, StartApi
from tests.processes import AGENTBUS

DOCS = [
    ("t1", "budget.md", ["finance"], "# Budget\n\nThe finance budget for next year is 42 million."),
    ("t1", "handbook.md", [], "# Handbook\n\nThe budget handbook explains budget requests."),
    ("t2", "t2-budget.md", [], "# Budget\n\nTenant two's budget is 7 million."),
]


@pytest.fixture
async def documents(tmp_path: Path) -> AsyncIterator[Retrieval]:
    """t1: a finance-only document and one for everyone; t2: one for everyone of t2."""
    settings = RetrievalSettings(data_dir=tmp_path, embedder="hashing")
    async with open_retrieval(settings, embedder=HashingEmbedder(), path=tmp_path / "q") as r:
        for tenant, source, acl, body in DOCS:
            doc = parse(body.encode(), source=source)
            prepared = prepare(doc, tenant=tenant, acl=acl, chunking=r.chunking)
            await r.ingestor.ingest(prepared, tenant=tenant)
        yield r


def citing(
    messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
) -> Turn:
    """A researcher that searches the documents once, then answers citing the first hit."""
    if messages[-1].role == "tool":
        return turn(text("The finance budget for next year is 42 million [1]."))
    return turn(tool_call("search_docs", {"query": "finance budget"}))


@contextlib.asynccontextmanager
async def over_http(api: Api, key: str | None) -> AsyncGenerator[Client]:
    """The official client on the API's ``/mcp``, as the holder of ``key``."""
    headers = api.auth(key) if key else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=120)) as http,
        Client(streamable_http_client(f"{api.base}/mcp", http_client=http), cache=None) as client,
    ):
        yield client


async def call(client: Client, tool: str, args: dict[str, Any]) -> tuple[CallToolResult, list[str]]:
    """A tool's result and the progress messages that came before it."""
    notes: list[str] = []

    async def note(progress: float, total: float | None, message: str | None) -> None:
        notes.append(message or "")

    return await client.call_tool(tool, args, progress_callback=note), notes


def innermost(error: BaseException) -> BaseException:
    """The error inside (task) exception groups."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def text_of(result: CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, TextContent))


async def stored(api: Api, key: str, run_id: str) -> httpx.Response:
    return await api.http.get(f"/api/v1/runs/{run_id}", headers=api.auth(key))


async def test_ask_streams_progress_and_returns_the_checked_answer(start_api: StartApi) -> None:
    api = await start_api()
    key = await api.key("t1", "alice")
    async with over_http(api, key) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        result, notes = await call(client, "ask", {"question": "What is 23 × 19?"})

    assert set(listed) == {"ask", "resume", "search_docs"}
    assert listed["ask"].input_schema["required"] == ["question"]
    answer = result.structured_content or {}
    run_id = answer["run_id"]
    assert not result.is_error and answer["answer"] == BENCHMARK_ANSWER
    assert text_of(result).startswith(BENCHMARK_ANSWER)
    assert notes[0] == f"run {run_id} started (single mode)"
    assert any(n.startswith("→ calculator(") for n in notes)  # the tool step
    assert any(n.startswith("← calculator: ok") for n in notes)
    assert "".join(n for n in notes if "437" in n and "→" not in n)  # answer chunks
    run = (await stored(api, key, run_id)).json()
    assert run["answer"] == answer["answer"] and run["conversation_id"] == answer["conversation_id"]
    assert answer["verified"] == run["verified"]
    # The run is alice's: another user of the tenant does not see it.
    assert (await stored(api, await api.key("t1", "bob"), run_id)).status_code == 404


async def test_multi_mode_reports_the_plan_and_the_verdicts(start_api: StartApi) -> None:
    api = await start_api()
    key = await api.key()
    async with over_http(api, key) as client:
        args = {"question": "What is 23 × 19?", "mode": "multi", "accuracy": "accurate"}
        result, notes = await call(client, "ask", args)

    answer = result.structured_content or {}
    run = (await stored(api, key, answer["run_id"])).json()
    assert run["mode"] == "multi" and answer["answer"] == run["answer"]
    assert any(n.startswith("plan: ") for n in notes)
    assert any(n.startswith("verifier: ") for n in notes)
    assert any("[draft 1]" in n for n in notes)  # drafts are progress, never the answer


async def test_an_answer_cites_the_callers_documents(
    start_api: StartApi, documents: Retrieval
) -> None:
    api = await start_api(ScriptedLLM(citing), retrieval=documents)
    key = await api.key("t1", "alice", groups=("finance",))
    async with over_http(api, key) as client:
        result, _ = await call(client, "ask", {"question": "What is the finance budget?"})

    answer = result.structured_content or {}
    [cited] = answer["citations"]
    assert cited["ref"] == 1 and cited["source"] in ("budget.md", "handbook.md")
    assert "[1]" in answer["answer"] and "[1] " in text_of(result).split("Sources:")[1]


async def test_search_docs_finds_the_callers_documents_and_no_one_elses(
    start_api: StartApi, documents: Retrieval
) -> None:
    api = await start_api(retrieval=documents)
    people = {
        "alice": await api.key("t1", "alice", groups=("finance",)),
        "bob": await api.key("t1", "bob"),
        "carol": await api.key("t2", "carol", groups=("finance",)),
    }
    found: dict[str, set[str]] = {}
    for name, key in people.items():
        async with over_http(api, key) as client:
            result, _ = await call(client, "search_docs", {"query": "budget", "top_k": 10})
        assert not result.is_error, text_of(result)
        found[name] = {hit["source"] for hit in (result.structured_content or {})["results"]}

    assert found == {
        "alice": {"budget.md", "handbook.md"},
        "bob": {"handbook.md"},  # not in finance
        "carol": {"t2-budget.md"},  # another tenant: never t1's, whatever the group
    }


async def test_a_gate_is_an_error_result_and_resume_finishes_the_run(start_api: StartApi) -> None:
    api = await start_api()
    admin = await api.key("t1", "root", KeyRole.ADMIN)
    put = await api.http.put("/api/v1/settings", json={"human_gate": True}, headers=api.auth(admin))
    assert put.status_code == 200, put.text
    key = await api.key("t1", "alice")
    async with over_http(api, key) as client:
        paused, _ = await call(client, "ask", {"question": "What is 23 × 19?", "mode": "multi"})
    message = text_of(paused)
    run_id = message.split("the run ")[1].split(" ")[0]
    assert paused.is_error and "approve_answer" in message and "resume tool" in message
    assert (await stored(api, key, run_id)).json()["status"] == "suspended"

    async with over_http(api, await api.key("t1", "mallory")) as intruder:
        refused, _ = await call(intruder, "resume", {"run_id": run_id, "decision": "approve"})
    assert refused.is_error and "run_not_found" in text_of(refused)
    async with over_http(api, key) as client:
        resumed, notes = await call(client, "resume", {"run_id": run_id, "decision": "approve"})

    run = (await stored(api, key, run_id)).json()
    assert not resumed.is_error and run["status"] == "done"
    assert (resumed.structured_content or {})["answer"] == run["answer"]
    assert not any(n.startswith("plan: ") for n in notes)  # only what came after the gate


async def test_a_call_the_client_abandons_cancels_its_run(start_api: StartApi) -> None:
    api = await start_api(ScriptedLLM(token_delay=0.2))
    key = await api.key()
    started: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def note(progress: float, total: float | None, message: str | None) -> None:
        if message and message.startswith("run ") and not started.done():
            started.set_result(message.split()[1])

    async with over_http(api, key) as client:
        asking = asyncio.create_task(
            client.call_tool("ask", {"question": "What is 23 × 19?"}, progress_callback=note)
        )
        run_id = await asyncio.wait_for(started, 20)
        asking.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asking

    async with asyncio.timeout(20):
        while True:
            if (await stored(api, key, run_id)).json()["status"] == "cancelled":
                break
            await asyncio.sleep(0.1)


async def test_an_unknown_resource_gets_the_code_of_the_revision_the_request_speaks(
    start_api: StartApi,
) -> None:
    api = await start_api()
    key = await api.key("t1", "alice")
    read = {"jsonrpc": "2.0", "id": 3, "method": "resources/read"}
    read |= {"params": {"uri": "file:///nonexistent.txt"}}

    async def under(version: str) -> str:
        accept = {"Accept": "application/json, text/event-stream"}
        headers = api.auth(key) | accept | {"MCP-Protocol-Version": version}
        return (await api.http.post("/mcp", json=read, headers=headers)).text.replace(" ", "")

    # 2025-11-25's "Resource not found" is -32002; 2026-07-28 made it -32602.
    assert '"code":-32002,"message":"Resourcenotfound"' in await under("2025-11-25")
    assert '"data":{"uri":"file:///nonexistent.txt"}' in await under("2025-11-25")
    assert '"code":-32602' in await under("2026-07-28")


async def test_bad_calls_get_mcps_own_error_shapes(start_api: StartApi) -> None:
    api = await start_api()
    key = await api.key("t1", "alice")
    async with over_http(api, key) as client:
        bad_mode, _ = await call(client, "ask", {"question": "hi", "mode": "fast"})
        empty, _ = await call(client, "ask", {"question": ""})
        foreign = {"question": "hi", "conversation_id": "c-of-someone-else"}
        async with over_http(api, await api.key("t2", "carol")) as other:
            await call(other, "ask", {"question": "What is 23 × 19?", **foreign})
        not_hers, _ = await call(client, "ask", {"question": "hi", **foreign})
        with pytest.raises(MCPError) as unknown_tool:
            await call(client, "no_such_tool", {})
        with pytest.raises(MCPError) as unknown_prompt:
            await client.get_prompt("no_such_prompt")
    headers = api.auth(key) | {"Accept": "application/json, text/event-stream"}
    lookup = {"jsonrpc": "2.0", "id": 7, "method": "tools/lookup", "params": {}}
    no_method = await api.http.post("/mcp", json=lookup, headers=headers)

    # Unknown names are protocol errors (-32602), not a tool's failure nor an internal error.
    assert unknown_tool.value.code == INVALID_PARAMS
    assert unknown_tool.value.message == "Unknown tool: no_such_tool"
    assert unknown_prompt.value.code == INVALID_PARAMS
    assert unknown_prompt.value.message == "Unknown prompt: no_such_prompt"
    assert '"code":-32601' in no_method.text.replace(" ", "")  # a JSON-RPC error
    assert bad_mode.is_error and "mode" in text_of(bad_mode)
    assert empty.is_error and "question" in text_of(empty)
    assert not_hers.is_error and text_of(not_hers).count("conversation_not_found") == 1


@pytest.mark.parametrize("key", [None, "abk_unknown_key"])
async def test_a_caller_without_a_valid_key_is_refused(
    start_api: StartApi, key: str | None
) -> None:
    api = await start_api()
    ping = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    raw = await api.http.post("/mcp", json=ping, headers=api.auth(key) if key else {})
    assert raw.status_code == 401 and 'error="invalid_token"' in raw.headers["www-authenticate"]
    assert raw.json()["error"]["message"].startswith("unauthorized: ")  # a JSON-RPC error
    try:
        async with over_http(api, key) as client:
            await client.list_tools()
    except BaseExceptionGroup as group:  # the client's task groups wrap it
        refused = innermost(group)
    else:
        pytest.fail("the client connected without a valid key")
    assert isinstance(refused, MCPError) and refused.code == INVALID_REQUEST
    assert str(refused).startswith("unauthorized: ")


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}


@pytest.mark.parametrize(
    ("host", "origin", "status", "code"),
    [
        ("evil.example.com", "http://evil.example.com", 403, "origin_not_allowed"),  # rebound
        ("127.0.0.1:8080", "http://evil.example.com", 403, "origin_not_allowed"),
        ("localhost:8080", "https://page.example.org", 403, "origin_not_allowed"),
        ("mcp.example.org", None, 421, "host_not_allowed"),
        ("evil.example.com", "http://127.0.0.1:8080", 421, "host_not_allowed"),
    ],
)
async def test_a_host_or_origin_not_allowed_is_refused_before_the_key(
    start_api: StartApi, host: str, origin: str | None, status: int, code: str
) -> None:
    api = await start_api()
    headers = {"Host": host, "Accept": "application/json, text/event-stream"}
    headers |= {"Origin": origin} if origin else {}
    raw = await api.http.post("/mcp", json=INITIALIZE, headers=headers)  # no key at all

    assert raw.status_code == status
    assert raw.json()["error"]["data"]["code"] == code
    assert "AGENTBUS_" in raw.json()["error"]["message"]  # which setting allows it


async def test_loopback_and_the_configured_host_and_origins_are_answered(
    start_api: StartApi,
) -> None:
    api = await start_api(
        mcp_allowed_hosts="localhost,127.0.0.1,mcp.example.org:8443",
        api_allowed_origins="https://chat.example.org",
    )
    key = await api.key("t1", "alice")
    allowed = [
        ("127.0.0.1:18401", "http://127.0.0.1:18401"),
        ("localhost", "http://localhost:6274"),  # a local inspector page on another port
        ("mcp.example.org:8443", "https://mcp.example.org:8443"),
        ("mcp.example.org:8443", "https://chat.example.org"),
    ]
    statuses: list[int] = []
    for host, origin in allowed:
        headers = api.auth(key) | {"Host": host, "Origin": origin}
        headers["Accept"] = "application/json, text/event-stream"
        statuses.append((await api.http.post("/mcp", json=INITIALIZE, headers=headers)).status_code)
    other_port = {"Host": "mcp.example.org:9443", "Accept": "application/json, text/event-stream"}
    refused = await api.http.post("/mcp", json=INITIALIZE, headers=api.auth(key) | other_port)

    assert statuses == [200, 200, 200, 200]
    assert refused.status_code == 421  # host:port allows that port only


def stdio_env(key: str, tmp_path: Path) -> dict[str, str]:
    """What an assistant's MCP config gives ``agentbus mcp``: the key (and a data folder)."""
    path = os.environ.get("PATH", "")
    return {"PATH": path, "AGENTBUS_API_KEY": key, "AGENTBUS_DATA_DIR": str(tmp_path / "mcp")}


def stdio(api: Api, key: str, tmp_path: Path) -> StdioServerParameters:
    """``agentbus mcp`` relaying to ``api`` with ``key``, as an assistant would start it."""
    args = ["mcp", "--api-url", api.base]
    return StdioServerParameters(command=AGENTBUS, args=args, env=stdio_env(key, tmp_path))


async def test_agentbus_mcp_serves_the_tools_over_stdio_through_the_api(
    start_api: StartApi, tmp_path: Path
) -> None:
    api = await start_api()
    key = await api.key("t1", "alice")
    async with Client(stdio(api, key, tmp_path), cache=None) as client:
        described = client.instructions or ""
        listed = {t.name for t in (await client.list_tools()).tools}
        result, notes = await call(client, "ask", {"question": "What is 23 × 19?"})
        bad, _ = await call(client, "ask", {"question": "hi", "mode": "fast"})

    answer = result.structured_content or {}
    assert listed == {"ask", "resume", "search_docs"} and described == INSTRUCTIONS  # the API's
    assert answer["answer"] == BENCHMARK_ANSWER
    assert any(n.startswith("→ calculator(") for n in notes)  # relayed as they came
    run = (await stored(api, key, answer["run_id"])).json()
    assert run["subject"] == "alice" and run["answer"] == answer["answer"]
    assert bad.is_error and "mode" in text_of(bad)


async def test_agentbus_mcp_with_a_refused_key_exits_with_one_clear_line(
    start_api: StartApi, tmp_path: Path
) -> None:
    api = await start_api()
    env = {**os.environ, **stdio_env("abk_unknown_key", tmp_path)}
    proc = await asyncio.create_subprocess_exec(
        AGENTBUS, "mcp", "--api-url", api.base, env=env,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)

    assert proc.returncode == 1 and out == b""  # nothing on the protocol's stream
    [line] = [x for x in err.decode().splitlines() if x.startswith("error: ")]
    assert line.startswith(f"error: the MCP endpoint {api.base}/mcp failed")
    assert "unauthorized: the API key" in line and "Traceback" not in err.decode()
