"""A tenant's own tool choices: enabled tools (enforced by the gateway) and MCP servers."""

from __future__ import annotations

from agents.llm.scripted import ScriptedLLM, text, tool_call, turn
from bus.store import KeyRole
from tests.integration.api.conftest import StartApi


async def test_tenant_enabled_tools_are_enforced_by_the_gateway(start_api: StartApi) -> None:
    llm = ScriptedLLM(
        [turn(tool_call("calculator", {"expression": "1+1"})), turn(text("no calculator"))]
    )
    api = await start_api(llm)
    admin = await api.key("t1", "root", KeyRole.ADMIN)
    put = await api.http.put(
        "/api/v1/settings", json={"enabled_tools": ["current_time"]}, headers=api.auth(admin)
    )
    assert put.status_code == 200, put.text
    user = await api.key("t1", "alice")
    run = await api.http.post("/api/v1/runs", json={"question": "1+1?"}, headers=api.auth(user))
    events = await api.http.get(
        f"/api/v1/runs/{run.json()['run_id']}/events", headers=api.auth(user)
    )
    assert '"code":"permission_denied"' in events.text and '"status":"done"' in events.text


async def test_tenant_mcp_servers_are_urls_only_and_headers_are_not_echoed(
    start_api: StartApi,
) -> None:
    api = await start_api()
    admin = await api.key("t1", "root", KeyRole.ADMIN)
    stdio = {"mcp_servers": [{"name": "sh", "command": ["sh", "-c", "id"]}]}
    refused = await api.http.put("/api/v1/settings", json=stdio, headers=api.auth(admin))
    assert refused.status_code == 422 and "deployment-only" in refused.text
    http = {
        "mcp_servers": [
            {"name": "crm", "url": "https://mcp.example.com/mcp", "headers": {"X-Key": "s3cr3t"}}
        ]
    }
    ok = await api.http.put("/api/v1/settings", json=http, headers=api.auth(admin))
    assert ok.status_code == 200, ok.text
    shown = (await api.http.get("/api/v1/settings", headers=api.auth(admin))).json()
    [server] = shown["preferences"]["mcp_servers"]
    assert server["url"] == "https://mcp.example.com/mcp" and server["headers"] == {
        "X-Key": "[REDACTED]"
    }
    assert "s3cr3t" not in str(shown)
