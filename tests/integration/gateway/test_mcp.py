"""MCP servers made with the `mcp` package: listed into the registry, run through the chain."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from mcp.server.transport_security import TransportSecuritySettings
from redis.asyncio import Redis

from agents.graph import next_role
from api.compose.settings import AppSettings
from bus import keys
from bus.commands import (
    Command,
    RunSettings,
    RunState,
    ToolCallBatch,
    ToolCallRequest,
    deadline_in,
)
from bus.events import ToolResult
from bus.runtime.context import StepContext
from gateway.call_context import CallContext, CallPolicy, GatewayDeps
from gateway.chain import invoke
from gateway.errors import SsrfBlocked
from gateway.mcp.connection import McpConnection
from gateway.mcp.hub import McpHub
from gateway.mcp_config.servers import McpServerConfig
from gateway.once import idempotency_key
from gateway.ports import TenantPolicy
from gateway.registry import ToolRegistry
from gateway.spec import Risk
from gateway.tenants import DeploymentPolicies
from gateway.tools import Calculator
from gateway.worker import make_gateway_handler
from tests import warm_cli
from tests.integration.gateway import mcp_server
from tests.integration.gateway.mcp_server import SANDBOX
from tests.support import narrow
from tests.unit.gateway.local_http import OVERRIDE, PUBLIC_IP, FakeResolver

SERVER = str(Path(mcp_server.__file__).resolve())
STDIO = McpServerConfig.model_validate(
    {"name": "calc", "command": [sys.executable, SERVER], "timeout_s": 1.5, "sandbox": SANDBOX}
)


@pytest.fixture
async def hub() -> AsyncIterator[McpHub]:
    hub = McpHub(resolver=FakeResolver({"mcp.test": [PUBLIC_IP]}), connect_override=OVERRIDE)
    try:
        yield hub
    finally:
        await hub.aclose()


def context(registry: ToolRegistry, **policy: Any) -> CallContext:
    return CallContext(
        tenant_id="t1",
        subject="alice",
        run_id="run-1",
        agent="researcher",
        policy=CallPolicy(**policy),
        deps=GatewayDeps(registry=registry),
    )


async def call(registry: ToolRegistry, name: str, args: dict[str, Any], **policy: Any) -> Any:
    policy.setdefault("approve_high_risk", True)
    request = ToolCallRequest(call_id="c1", name=name, arguments=args)
    outcome, _ = await invoke(request, context(registry, **policy))
    return outcome


async def test_stdio_server_tools_are_listed_with_their_schemas(hub: McpHub) -> None:
    base = ToolRegistry([Calculator()])
    registry = await hub.registry_for(base, [STDIO])
    assert registry.names() == [
        "calc__add",
        "calc__crash",
        "calc__fail",
        "calc__ledger_append",
        "calc__ledger_note",
        "calc__shout",
        "calc__slow",
        "calculator",
    ]
    add = registry.get("calc__add").spec
    assert add.risk is Risk.HIGH and add.side_effects and add.timeout_s == 1.5
    assert add.input_schema["required"] == ["a", "b"]
    assert add.input_schema["properties"]["a"]["type"] == "integer"
    assert "Add two integers." in add.description
    assert await hub.registry_for(base, [STDIO]) is registry  # cached: compiled once
    assert await hub.registry_for(base, []) is base


async def test_a_call_runs_on_the_server_through_the_chain(hub: McpHub) -> None:
    registry = await hub.registry_for(ToolRegistry(), [STDIO])
    outcome = await call(registry, "calc__add", {"a": 2, "b": 40})
    assert (outcome.status, outcome.code) == ("ok", "ok")
    assert outcome.result == {"content": "42", "structured": {"result": 42}}
    shouted = await call(registry, "calc__shout", {"text": "hi"})
    assert shouted.result["content"] == "HI"


async def test_the_chain_checks_run_before_the_server_is_called(hub: McpHub) -> None:
    registry = await hub.registry_for(ToolRegistry(), [STDIO])
    unapproved = await call(registry, "calc__add", {"a": 1, "b": 2}, approve_high_risk=False)
    assert unapproved.code == "approval_required"
    invalid = await call(registry, "calc__add", {"a": "one", "b": 2})
    assert invalid.code == "schema_invalid" and "a: must be of type integer" in invalid.message
    disabled = await call(registry, "calc__add", {"a": 1, "b": 2}, enabled_tools=frozenset())
    assert disabled.code == "permission_denied"


async def test_server_errors_and_timeouts_become_outcomes(hub: McpHub) -> None:
    registry = await hub.registry_for(ToolRegistry(), [STDIO])
    failed = await call(registry, "calc__fail", {"reason": "disk on fire"})
    assert (failed.status, failed.code) == ("error", "tool_error")
    assert "disk on fire" in failed.message
    slow = await call(registry, "calc__slow", {"seconds": 10})
    assert (slow.status, slow.code) == ("error", "timeout")
    # The session survives a timed-out call.
    assert (await call(registry, "calc__add", {"a": 1, "b": 1})).result["content"] == "2"


async def test_a_server_that_exits_is_started_again_for_the_next_batch(hub: McpHub) -> None:
    registry = await hub.registry_for(ToolRegistry(), [STDIO])
    crashed = await call(registry, "calc__crash", {})
    assert (crashed.status, crashed.code) == ("error", "mcp_unavailable")
    registry = await hub.registry_for(ToolRegistry(), [STDIO])
    assert (await call(registry, "calc__add", {"a": 1, "b": 1})).result["content"] == "2"


async def test_a_server_that_does_not_start_leaves_its_tools_out(hub: McpHub) -> None:
    broken = McpServerConfig(name="broken", command=(sys.executable, "-c", "raise SystemExit(3)"))
    registry = await hub.registry_for(ToolRegistry([Calculator()]), [broken, STDIO])
    assert "calculator" in registry and "calc__add" in registry
    assert not any(n.startswith("broken__") for n in registry.names())


async def test_only_the_configured_tools_of_a_server_are_exposed(hub: McpHub) -> None:
    only_add = STDIO.model_copy(update={"tools": frozenset({"add"}), "risk": Risk.LOW})
    registry = await hub.registry_for(ToolRegistry(), [only_add])
    assert registry.names() == ["calc__add"]
    outcome = await call(registry, "calc__add", {"a": 1, "b": 2}, approve_high_risk=False)
    assert outcome.status == "ok"


@pytest.fixture
def http_server() -> Iterator[int]:
    """The same server over streamable HTTP on loopback; yields its port."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    security = TransportSecuritySettings(allowed_hosts=[f"mcp.test:{port}"])
    app = mcp_server.server.streamable_http_app(transport_security=security)
    server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="on"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])))
    thread.start()
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


async def test_a_streamable_http_server_is_reached_through_the_ssrf_guard(
    hub: McpHub, http_server: int
) -> None:
    remote = McpServerConfig(name="remote", url=f"http://mcp.test:{http_server}/mcp")
    registry = await hub.registry_for(ToolRegistry(), [remote])
    assert "remote__add" in registry
    outcome = await call(registry, "remote__add", {"a": 20, "b": 22})
    assert outcome.result == {"content": "42", "structured": {"result": 42}}


async def test_a_streamable_http_server_on_a_private_address_is_refused(
    hub: McpHub, http_server: int
) -> None:
    direct = McpServerConfig(name="direct", url=f"http://127.0.0.1:{http_server}/mcp")
    connection = McpConnection(direct, connect_override=OVERRIDE)
    with pytest.raises(SsrfBlocked, match="loopback"):
        await connection.start()
    assert (await hub.registry_for(ToolRegistry(), [direct])).names() == []


async def test_agentbus_tools_list_shows_the_deployments_mcp_tools(tmp_path: Path) -> None:
    server = {"name": "calc", "command": [sys.executable, SERVER], "sandbox": SANDBOX}
    servers = json.dumps([server])
    env = {"AGENTBUS_MCP_SERVERS": servers, "AGENTBUS_DATA_DIR": str(tmp_path), "PATH": ""}
    done = await asyncio.wait_for(warm_cli.run(["tools", "list"], env), 60)
    assert done.returncode == 0, done.stderr
    assert "calc__add" in done.stdout and "[HIGH; side effects]" in done.stdout


async def test_the_gateway_worker_gives_a_tenant_its_mcp_servers_tools(
    hub: McpHub, fake_redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    handler = make_gateway_handler(
        GatewayDeps(registry=ToolRegistry([Calculator()])),
        DeploymentPolicies(TenantPolicy(mcp_servers=(STDIO,))),
        hub,
        route=next_role,
    )
    cmd = Command(
        run_id="run-1",
        tenant_id="t1",
        subject="alice",
        role=keys.Role.GATEWAY,
        deadline=deadline_in(60),
        payload=ToolCallBatch(
            calls=[ToolCallRequest(call_id="c1", name="calc__add", arguments={"a": 1, "b": 2})],
            state=RunState(question="q", settings=RunSettings(approve_high_risk=True)),
            then="end",
        ),
    )
    result = await handler(StepContext(cmd, 1, fake_redis, make_settings().bus), cmd)
    [event, done] = result.events
    tool_result = narrow(ToolResult, event)
    assert (tool_result.status, tool_result.result["content"], done.type) == ("ok", "3", "done")


async def test_a_server_tool_with_the_key_argument_gets_the_calls_key_on_every_delivery(
    hub: McpHub, fake_redis: Redis, make_settings: Callable[..., AppSettings], tmp_path: Path
) -> None:
    writable = tmp_path / "ledger"
    writable.mkdir(mode=0o777)
    writable.chmod(0o777)  # the sandbox runs the server as nobody under a root gateway
    ledger = writable / "ledger.tsv"
    box = STDIO.sandbox.model_copy(update={"write_paths": (str(writable),)})
    keyed = STDIO.model_copy(
        update={
            "idempotency_key_arg": "idempotency_key",
            "env": {"MCP_LEDGER_FILE": str(ledger)},
            "sandbox": box,
        }
    )
    registry = await hub.registry_for(ToolRegistry(), [keyed])
    spec = registry.get("calc__ledger_append").spec
    assert spec.takes_idempotency_key and "idempotency_key" not in spec.input_schema["properties"]
    assert spec.input_schema["required"] == ["entry"]  # the model never sees the key
    assert not registry.get("calc__ledger_note").spec.takes_idempotency_key
    handler = make_gateway_handler(
        GatewayDeps(registry=ToolRegistry()),
        DeploymentPolicies(TenantPolicy(mcp_servers=(keyed,))),
        hub,
        route=next_role,
    )
    cmd = Command(
        run_id="run-k",
        tenant_id="t1",
        subject="alice",
        role=keys.Role.GATEWAY,
        deadline=deadline_in(60),
        payload=ToolCallBatch(
            calls=[
                ToolCallRequest(call_id="c1", name="calc__ledger_append", arguments={"entry": "x"})
            ],
            state=RunState(question="q", settings=RunSettings(approve_high_risk=True)),
            then="end",
        ),
    )
    settings = make_settings().bus
    first = await handler(StepContext(cmd, 1, fake_redis, settings), cmd)
    assert narrow(ToolResult, first.events[0]).result["content"] == "line 1, same key in _meta"
    await fake_redis.delete(keys.run_call("run-k", 0, "c1"))  # as if never recorded ...
    await fake_redis.set(keys.run_call_claim("run-k", 0, "c1"), "a gateway that died")
    again = await handler(StepContext(cmd, 2, fake_redis, settings), cmd)  # ... run again
    assert narrow(ToolResult, again.events[0]).result["content"] == "line 1, same key in _meta"
    assert ledger.read_text() == f"{idempotency_key('t1', 'run-k', 'c1')}\tx\n"
