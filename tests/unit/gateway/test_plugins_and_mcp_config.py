"""Deployment tool plugins (AGENTBUS_TOOL_PLUGINS) and MCP server settings, parsed strictly."""

from __future__ import annotations

import sys

import pytest
from jsonschema import Draft202012Validator

import gateway.registry
from gateway.errors import ConfigInvalid
from gateway.mcp.tool import output_schema, registry_name
from gateway.mcp_config.servers import McpServerConfig, parse_servers
from gateway.plugins import load_plugins
from gateway.spec import Risk
from gateway.tools import Calculator

PLUGIN = "tests.integration.gateway.effects_plugin"


def calculator() -> Calculator:
    return Calculator()


def not_tools() -> list[object]:
    return [object()]


def test_plugins_load_tools_from_factories() -> None:
    tools = load_plugins(f"{PLUGIN}:tools, {__name__}:calculator")
    assert [t.spec.name for t in tools] == ["append_line", "wait_for_file", "calculator"]
    assert load_plugins("") == [] and load_plugins(" , ") == []


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ("no_colon", "is not 'module:factory'"),
        ("no.such.module:x", "cannot be loaded"),
        (f"{__name__}:missing", "cannot be loaded"),
        (f"{__name__}:PLUGIN", "is not callable"),
        (f"{__name__}:not_tools", "which is not a tool"),
    ],
)
def test_a_bad_plugin_entry_is_a_config_error(entry: str, words: str) -> None:
    with pytest.raises(ConfigInvalid, match=words) as caught:
        load_plugins(entry)
    assert caught.value.code == "gateway_config_invalid"


def test_mcp_servers_need_exactly_one_transport_and_unique_names() -> None:
    [stdio, http] = parse_servers(
        '[{"name": "a", "command": ["srv", "--x"]}, {"name": "b", "url": "https://h.test/mcp"}]'
    )
    assert stdio.where == "srv --x" and http.where == "https://h.test/mcp"
    assert (
        stdio.key != http.key and stdio.key == McpServerConfig(name="a", command=("srv", "--x")).key
    )
    for bad in (
        '[{"name": "a"}]',
        '[{"name": "a", "command": ["x"], "url": "https://h.test"}]',
        '[{"name": "a", "url": "file:///etc/passwd"}]',
        '[{"name": "A b", "command": ["x"]}]',
        '[{"name": "a", "command": ["x"]}, {"name": "a", "command": ["y"]}]',
        "not json",
    ):
        with pytest.raises(ConfigInvalid):
            parse_servers(bad)
    assert parse_servers("  ") == ()


def test_headers_of_an_mcp_server_are_not_shown() -> None:
    config = McpServerConfig(name="a", url="https://h.test/mcp", headers={"Authorization": "k"})
    assert "Authorization" not in repr(config)


def test_mcp_tool_names_and_output_schemas() -> None:
    assert registry_name("files", "read.file/v2") == "files__read_file_v2"
    assert registry_name("files", "x" * 80) is None
    declared = {
        "type": "object",
        "properties": {"item": {"$ref": "#/$defs/Item"}},
        "$defs": {"Item": {"type": "integer"}},
    }
    # The server's relative $refs still resolve once embedded (it gets its own $id).
    validator = Draft202012Validator(output_schema(declared))
    assert validator.is_valid({"content": "", "structured": {"item": 3}})
    assert not validator.is_valid({"content": "", "structured": {"item": "three"}})
    assert not validator.is_valid({"content": ""})  # declared: structured is required
    assert Draft202012Validator(output_schema(None)).is_valid({"content": "x"})


def test_a_plugin_on_the_old_import_path_still_loads_with_a_deprecation_warning() -> None:
    sys.modules.pop("tests.unit.gateway.old_path_plugin", None)
    with pytest.warns(DeprecationWarning, match="moved to gateway.spec"):
        [tool] = load_plugins("tests.unit.gateway.old_path_plugin:tools")
    assert tool.spec.name == "echo_old_path" and tool.spec.risk == Risk.LOW
    with pytest.raises(AttributeError):
        _ = gateway.registry.NoSuchName  # pyright: ignore[reportAttributeAccessIssue]
