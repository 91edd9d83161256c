"""What the agents are given: the gateway's tools as the model is offered them."""

from __future__ import annotations

from agents.deps import tool_definitions
from gateway.registry import ToolRegistry
from gateway.tools import builtin_tools


def test_the_model_is_offered_every_registered_tool_with_its_input_schema() -> None:
    registry = ToolRegistry(builtin_tools())
    offered = tool_definitions(registry)
    assert [t.name for t in offered] == registry.names()
    calculator = offered[0]
    spec = registry.get("calculator").spec
    assert (calculator.description, calculator.parameters) == (spec.description, spec.input_schema)
    assert calculator.parameters["required"] == ["expression"]
    assert tool_definitions(ToolRegistry()) == []
