"""MCP tools reach the model (issue 14, item 2): a run is offered exactly the tools its
tenant enabled, its MCP servers' included, and a scripted run calls an MCP tool of a
server the test starts and answers with its result."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Sequence

import pytest

from agents.llm.ports import ChatMessage, LLMOptions, ToolDefinition
from agents.llm.scripted import ScriptedLLM, text, tool_call, turn
from gateway.mcp.hub import McpHub
from tests.integration.agents.events import final
from tests.integration.agents.system import StartSystem
from tests.integration.gateway.mcp_server import SANDBOX
from tests.integration.gateway.test_mcp import SERVER

MCP_SERVERS = json.dumps(
    [{"name": "calc", "command": [sys.executable, SERVER], "timeout_s": 10, "sandbox": SANDBOX}]
)


@pytest.fixture
async def hub() -> AsyncIterator[McpHub]:
    hub = McpHub()
    try:
        yield hub
    finally:
        await hub.aclose()


def adding() -> ScriptedLLM:
    """Calls the MCP server's add when it is offered, then answers with its result."""

    def script(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ):
        last = messages[-1]
        if last.role == "tool":
            found = json.loads(last.content)["result"]["content"]
            return turn(text(f"The MCP server says {found}."))
        if any(t.name == "calc__add" for t in tools):
            return turn(tool_call("calc__add", {"a": 2, "b": 40}))
        return turn(text("No MCP tool was offered."))

    return ScriptedLLM(script)


async def test_a_run_calls_an_mcp_tool_and_answers_with_its_result(
    start_system: StartSystem, hub: McpHub
) -> None:
    llm = adding()
    system = await start_system(llm, mcp=hub, mcp_servers=MCP_SERVERS)
    events = await system.ask("What is 2 + 40?", approve_high_risk=True)
    assert final(events).status == "done", events[-3:]
    assert final(events).answer == "The MCP server says 42."
    offered = {t.name for t in llm.requests[0][1]}
    assert {"calc__add", "calc__shout", "calculator"} <= offered


async def test_only_the_tools_the_tenant_enabled_are_offered(
    start_system: StartSystem, hub: McpHub
) -> None:
    llm = adding()
    system = await start_system(llm, mcp=hub, mcp_servers=MCP_SERVERS)
    await system.stores.tenant_settings.put(
        "t1", {"enabled_tools": ["calc__add", "current_time"]}, updated_by="root"
    )
    events = await system.ask("What is 2 + 40?", approve_high_risk=True)
    assert final(events).answer == "The MCP server says 42."
    for _, tools, _ in llm.requests:
        assert sorted(t.name for t in tools) == ["calc__add", "current_time"]
