"""Tool declarations and the registry."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from gateway.errors import RegistryError, UnknownTool
from gateway.ports import EgressClient, Tool
from gateway.registry import ToolRegistry
from gateway.spec import Risk, ToolSpec
from gateway.tools import builtin_tools

INPUT = {"type": "object", "properties": {"x": {"type": "integer"}}}


def spec(name: str = "t", **kw: Any) -> ToolSpec:
    kw.setdefault("input_schema", INPUT)
    kw.setdefault("output_schema", {"type": "object"})
    return ToolSpec(name=name, description="d", **kw)


class Named:
    def __init__(self, name: str) -> None:
        self.spec = spec(name)

    async def run(self, args: dict[str, Any], net: EgressClient | None) -> dict[str, Any]:
        return {}


def test_builtin_tools_satisfy_the_protocol_and_register() -> None:
    registry = ToolRegistry(builtin_tools())
    assert registry.names() == ["calculator", "current_time", "http_fetch", "web_search"]
    assert all(isinstance(t, Tool) for t in builtin_tools())
    assert registry.get("http_fetch").spec.risk is Risk.HIGH
    assert registry.get("web_search").spec.hosts == ("html.duckduckgo.com",)
    assert registry.get("calculator").spec.hosts == ()


def test_duplicate_names_are_refused() -> None:
    registry = ToolRegistry([Named("a")])
    with pytest.raises(RegistryError):
        registry.register(Named("a"))


def test_unknown_names_raise() -> None:
    with pytest.raises(UnknownTool):
        ToolRegistry().get("nope")


def test_a_non_tool_is_refused() -> None:
    with pytest.raises(RegistryError):
        ToolRegistry().register(object())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "bad",
    [
        {"name": "has space"},
        {"name": "x" * 65},
        {"input_schema": {"type": "array"}},
        {"input_schema": {"type": "object", "properties": {"x": {"type": "nonsense"}}}},
        {"output_schema": {"type": 5}},
        {"timeout_s": 0},
        {"max_output_bytes": 10},
        {"risk": "EXTREME"},
    ],
)
def test_invalid_declarations_are_rejected(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        spec(**bad)


def test_declared_hosts_are_normalised() -> None:
    assert spec(hosts=(" Example.COM. ", "")).hosts == ("example.com",)
