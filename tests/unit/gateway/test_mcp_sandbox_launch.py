"""How a stdio MCP server is started: in its sandbox, or not at all without bubblewrap."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from gateway.errors import McpSandboxUnavailable
from gateway.mcp import sandbox
from gateway.mcp.sandbox import launch_for
from gateway.mcp_config.servers import McpServerConfig


def server(**fields: object) -> McpServerConfig:
    return McpServerConfig.model_validate(
        {"name": "files", "command": ["/opt/srv/run", "--x"], "env": {"ROOT": "/srv"}, **fields}
    )


def pairs(argv: list[str], flag: str) -> list[str]:
    """The value after each occurrence of ``flag``."""
    return [argv[i + 1] for i, a in enumerate(argv) if a == flag]


def test_without_bubblewrap_a_stdio_server_is_refused_with_a_code() -> None:
    with pytest.raises(McpSandboxUnavailable) as refused:
        launch_for(server(), bwrap=None)
    assert refused.value.code == "mcp_sandbox_unavailable" and "bubblewrap" in refused.value.hint


def test_an_unsandboxed_server_runs_its_own_command_and_is_marked() -> None:
    launch = launch_for(server(unsandboxed=True), bwrap=None)
    assert (launch.argv, launch.sandboxed) == (["/opt/srv/run", "--x"], False)


def test_the_sandbox_has_no_network_and_runs_the_command_last_under_limits() -> None:
    launch = launch_for(server(sandbox={"memory_mb": 256, "cpu_s": 9}), bwrap="/usr/bin/bwrap")
    argv = launch.argv
    assert argv[0] == "/usr/bin/bwrap" and launch.sandboxed
    assert {"--unshare-net", "--unshare-pid", "--die-with-parent", "--new-session"} <= set(argv)
    assert argv[-2:] == ["/opt/srv/run", "--x"]
    assert {f"--as={256 * 1024 * 1024}", "--cpu=9", "--nproc=64"} <= set(argv)
    assert "--share-net" not in argv


def test_granted_hosts_get_the_egress_proxy_and_never_the_hosts_network() -> None:
    config = server(sandbox={"hosts": ["api.example.com"]})
    argv = launch_for(config, bwrap="bwrap", proxy=Path("/tmp/x/proxy.sock")).argv
    assert "--unshare-net" in argv and "--share-net" not in argv
    assert argv[argv.index("/tmp/x/proxy.sock") + 1] == sandbox.PROXY_SOCKET
    source = str(Path(sandbox.__file__).with_name("egress_relay.py"))
    assert argv[argv.index(source) + 1] == sandbox.RELAY
    # The relay starts the command, under the limits: it is the process the gateway talks to.
    relay = len(argv) - 1 - argv[::-1].index(sandbox.RELAY)
    assert argv.index("prlimit") < relay and argv[relay + 1 : relay + 3] == [
        sandbox.PROXY_SOCKET,
        "--",
    ]
    assert argv[-2:] == ["/opt/srv/run", "--x"]
    with pytest.raises(AssertionError, match="egress proxy"):
        launch_for(config, bwrap="bwrap")
    assert sandbox.RELAY not in launch_for(server(), bwrap="bwrap").argv


def test_the_environment_is_the_configs_and_nothing_of_the_gateways(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AGENTBUS_SIGNING_KEY", "secret")
    env = launch_for(server(), bwrap="bwrap").env
    assert env["ROOT"] == "/srv" and env["HOME"] == "/tmp"
    assert not any(k.startswith("AGENTBUS_") for k in env)


def test_a_private_path_inside_a_grant_is_hidden_and_one_outside_is_never_bound(
    tmp_path: Path,
) -> None:
    data = tmp_path / "granted" / "data"
    data.mkdir(parents=True)
    db = tmp_path / "granted" / "agentbus.db"
    db.write_text("")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    config = server(sandbox={"read_paths": [str(tmp_path / "granted")]})
    argv = launch_for(config, hidden=[data, db, elsewhere], bwrap="bwrap").argv
    assert str(data) in pairs(argv, "--tmpfs")
    assert argv[argv.index(str(db)) - 1] == "/dev/null"
    assert str(elsewhere) not in argv
    assert str(tmp_path / "granted") in pairs(argv, "--ro-bind-try")


def test_a_root_gateway_drops_its_servers_to_nobody(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox.os, "geteuid", lambda: 0)
    argv = launch_for(server(), bwrap="bwrap").argv
    assert "setpriv" in argv and f"--reuid={sandbox.NOBODY}" in argv
    monkeypatch.setattr(sandbox.os, "geteuid", lambda: 1000)
    assert "setpriv" not in launch_for(server(), bwrap="bwrap").argv


def test_sandbox_settings_are_for_stdio_servers_and_paths_are_absolute() -> None:
    with pytest.raises(ValidationError, match="stdio"):
        McpServerConfig.model_validate(
            {"name": "crm", "url": "https://mcp.example.com/mcp", "unsandboxed": True}
        )
    with pytest.raises(ValidationError, match="absolute"):
        server(sandbox={"read_paths": ["relative/path"]})
