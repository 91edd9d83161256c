"""A hostile stdio MCP server in its sandbox: it cannot read the data folder or the
gateway's secrets, reach Redis or a host and port it was not granted, fork without end
or burn CPU past its limit, and the gateway (and the next call) carries on. Without
bubblewrap the server is not started unless an operator said ``unsandboxed``, which each
call's audit row then shows."""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from bus.commands import ToolCallRequest
from gateway.chain import invoke
from gateway.errors import McpSandboxUnavailable
from gateway.mcp import sandbox
from gateway.mcp.connection import McpConnection
from gateway.mcp.hub import McpHub
from gateway.mcp.sandbox import find_bwrap
from gateway.mcp.tool import UNSANDBOXED
from gateway.mcp_config.servers import McpServerConfig
from gateway.registry import ToolRegistry
from tests.integration.gateway import hostile_mcp_server
from tests.integration.gateway.mcp_server import SANDBOX
from tests.integration.gateway.test_mcp import call, context

#: The host's bubblewrap (``AGENTBUS_TEST_NO_BWRAP`` set: as on a host without it).
BWRAP = None if os.environ.get("AGENTBUS_TEST_NO_BWRAP") else find_bwrap()
#: Under CI (``CI`` set) a missing bubblewrap fails these tests instead of skipping them:
#: a CI host that could not install it must not pass with the sandbox untested.
UNDER_CI = bool(os.environ.get("CI"))

pytestmark = pytest.mark.skipif(
    BWRAP is None and not UNDER_CI, reason="bubblewrap is not installed (under CI: a failure)"
)


@pytest.fixture(autouse=True)
def _bubblewrap() -> None:
    """Fail, under CI, when bubblewrap is missing (elsewhere the module skips)."""
    if BWRAP is None:
        pytest.fail("bubblewrap is not installed and CI is set: run .ci/sandbox", pytrace=False)


HOSTILE = str(Path(hostile_mcp_server.__file__).resolve())


@pytest.fixture
def granted(tmp_path: Path) -> Path:
    """A folder the server may read, holding a data folder with a key in it (readable by
    anyone, so only the sandbox keeps it from the server)."""
    folder = tmp_path / "granted"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "local-api-key").write_text("abk_secret")
    (folder / "public.txt").write_text("for everyone")
    for path in (folder, folder / "data"):
        path.chmod(0o755)
    for path in (folder / "data" / "local-api-key", folder / "public.txt"):
        path.chmod(0o644)
    return folder


@pytest.fixture
async def hub(granted: Path) -> AsyncIterator[McpHub]:
    hub = McpHub(hidden=[granted / "data"])
    try:
        yield hub
    finally:
        await hub.aclose()


def hostile(granted: Path, **box: Any) -> McpServerConfig:
    """The hostile server, allowed to read the repository and ``granted``."""
    sandbox = {"read_paths": [*SANDBOX["read_paths"], str(granted)], **box}
    return McpServerConfig.model_validate(
        {
            "name": "hostile",
            "command": [sys.executable, HOSTILE],
            "env": {"VISIBLE": "yes"},
            "timeout_s": 20,
            "sandbox": sandbox,
        }
    )


async def content(hub: McpHub, config: McpServerConfig, tool: str, **args: Any) -> str:
    registry = await hub.registry_for(ToolRegistry(), [config])
    outcome = await call(registry, f"hostile__{tool}", args)
    assert outcome.status == "ok", outcome
    return str(outcome.result["content"])


def serve(banner: bytes) -> tuple[int, socket.socket]:
    """A TCP port on the host's loopback that greets each connection with ``banner``."""
    server = socket.create_server(("127.0.0.1", 0))

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with contextlib.suppress(OSError):
                conn.sendall(banner + b"\n")
            conn.close()

    threading.Thread(target=accept, daemon=True).start()
    return int(server.getsockname()[1]), server


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP port on loopback that accepts connections (from the host's network)."""
    port, server = serve(b"granted service")
    try:
        yield port
    finally:
        server.close()


@pytest.fixture
def second() -> Iterator[int]:
    """Another port on loopback, one no server is granted."""
    port, server = serve(b"second service")
    try:
        yield port
    finally:
        server.close()


async def test_the_server_reads_what_it_is_granted_and_never_the_data_folder(
    hub: McpHub, granted: Path
) -> None:
    config = hostile(granted)
    assert await content(hub, config, "read_file", path=str(granted / "public.txt")) == (
        "read: for everyone"
    )
    key = str(granted / "data" / "local-api-key")
    assert (await content(hub, config, "read_file", path=key)).startswith("refused")
    # Nothing outside the grants exists for it: not the gateway's files, not /root.
    outside = granted.parent / "outside.txt"
    outside.write_text("the gateway's")
    outside.chmod(0o644)
    for path in (str(outside), "/root/.bashrc", "/etc/shadow"):
        assert (await content(hub, config, "read_file", path=path)).startswith("refused"), path


async def test_the_server_sees_its_own_env_and_none_of_the_gateways(
    hub: McpHub, granted: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTBUS_SIGNING_KEY", "gateway-secret")
    monkeypatch.setenv("AGENTBUS_DATABASE_URL", "postgresql://u:pw@db/agentbus")
    config = hostile(granted)
    assert await content(hub, config, "read_env", name="VISIBLE") == "read: yes"
    for name in ("AGENTBUS_SIGNING_KEY", "AGENTBUS_DATABASE_URL"):
        assert await content(hub, config, "read_env", name=name) == "unset"


async def test_the_server_has_no_network_unless_its_config_grants_hosts(
    hub: McpHub, granted: Path, listener: int
) -> None:
    closed = hostile(granted)
    for port in (listener, 6379):  # a port the test serves, and the Redis the gateway uses
        said = await content(hub, closed, "connect", host="127.0.0.1", port=port)
        assert said.startswith("refused"), (port, said)


async def test_a_server_granted_a_port_reaches_it_through_the_proxy_and_nothing_else(
    hub: McpHub, granted: Path, listener: int, second: int
) -> None:
    opened = hostile(granted, hosts=[f"127.0.0.1:{listener}"])
    said = await content(hub, opened, "connect_via_proxy", host="127.0.0.1", port=listener)
    assert said == "connected: granted service"
    # The same host on a port it was not granted, through the proxy or around it.
    said = await content(hub, opened, "connect_via_proxy", host="127.0.0.1", port=second)
    assert said.startswith("refused: 403"), said
    for port in (listener, second, 6379):  # no network but the proxy: not even the grant
        said = await content(hub, opened, "connect", host="127.0.0.1", port=port)
        assert said.startswith("refused"), (port, said)
    # Other names of the host, Redis, and the metadata endpoint: refused by the proxy.
    for host, port in (("localhost", listener), ("127.0.0.1", 6379), ("169.254.169.254", 80)):
        said = await content(hub, opened, "connect_via_proxy", host=host, port=port)
        assert said.startswith("refused: 403"), (host, port, said)


async def test_an_ordinary_http_client_in_the_sandbox_follows_the_proxy_to_its_grant(
    hub: McpHub, granted: Path, second: int
) -> None:
    class Hello(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = f"hello from {self.path}".encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    web = ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    port = int(web.server_address[1])
    try:
        opened = hostile(granted, hosts=[f"127.0.0.1:{port}"])
        said = await content(hub, opened, "http_get", url=f"http://127.0.0.1:{port}/page")
        assert said == "got: hello from /page"
        said = await content(hub, opened, "http_get", url=f"http://127.0.0.1:{second}/")
        assert said == "refused: 403", said
    finally:
        web.shutdown()
        web.server_close()


async def test_a_fork_bomb_stops_at_the_process_limit_and_the_server_still_answers(
    hub: McpHub, granted: Path
) -> None:
    config = hostile(granted, max_processes=24)
    said = await content(hub, config, "fork_bomb", limit=500)
    assert said.startswith("refused after"), said
    assert int(said.split()[2].rstrip(":")) < 24
    assert await content(hub, config, "hello") == "hello"


async def test_a_server_past_its_cpu_limit_is_stopped_and_a_new_one_serves_the_next_call(
    hub: McpHub, granted: Path
) -> None:
    config = hostile(granted, cpu_s=3)
    registry = await hub.registry_for(ToolRegistry(), [config])
    burned = await call(registry, "hostile__burn", {"seconds": 30})
    assert (burned.status, burned.code) == ("error", "mcp_unavailable"), burned
    assert await content(hub, config, "hello") == "hello"


async def test_without_bubblewrap_a_stdio_server_is_not_started_unless_unsandboxed(
    hub: McpHub, granted: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandbox, "find_bwrap", lambda: None)  # as on a host without it
    config = hostile(granted)
    with pytest.raises(McpSandboxUnavailable, match="needs bubblewrap"):
        await McpConnection(config).start()
    assert (await hub.registry_for(ToolRegistry(), [config])).names() == []

    plain = config.model_copy(update={"unsandboxed": True, "sandbox": config.sandbox})
    registry = await hub.registry_for(ToolRegistry(), [plain])
    assert registry.get("hostile__hello").spec.version == UNSANDBOXED
    request = ToolCallRequest(call_id="c1", name="hostile__hello", arguments={})
    outcome, audit = await invoke(request, context(registry, approve_high_risk=True))
    assert outcome.status == "ok" and audit.tool_version == UNSANDBOXED
