"""Fake tools and a call context for chain tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bus.commands import ToolCallRequest
from gateway.call_context import CallContext, CallPolicy, GatewayDeps
from gateway.ports import EgressClient
from gateway.registry import ToolRegistry
from gateway.spec import Risk, ToolSpec

OBJECT_OUT = {"type": "object"}


class Echo:
    """Returns its arguments; records every call so tests can prove it never ran."""

    def __init__(self, name: str = "echo", risk: Risk = Risk.LOW, **spec: Any) -> None:
        self.calls: list[tuple[dict[str, Any], EgressClient | None]] = []
        self.spec = ToolSpec(
            name=name,
            description="Echo the arguments back.",
            input_schema={
                "type": "object",
                "properties": {
                    "text": {"type": "string", "maxLength": 20},
                    "count": {"type": "integer", "minimum": 1, "maximum": 10},
                    "api_key": {"type": "string"},
                },
                "required": ["text"],
                "additionalProperties": False,
            },
            output_schema=OBJECT_OUT,
            risk=risk,
            **spec,
        )

    async def run(self, args: dict[str, Any], net: EgressClient | None) -> dict[str, Any]:
        self.calls.append((args, net))
        return {"echo": args}


class Scripted:
    """A tool whose behaviour is one async function."""

    def __init__(self, name: str, behaviour: Any, **spec: Any) -> None:
        self._behaviour = behaviour
        spec.setdefault("output_schema", OBJECT_OUT)
        self.spec = ToolSpec(
            name=name,
            description="A scripted test tool.",
            input_schema={"type": "object"},
            **spec,
        )

    async def run(self, args: dict[str, Any], net: EgressClient | None) -> Any:
        return await self._behaviour(args, net)


def context(*tools: Any, **policy: Any) -> CallContext:
    return CallContext(
        tenant_id="t1",
        subject="alice",
        run_id="run-1",
        agent="researcher",
        policy=CallPolicy(**policy),
        deps=GatewayDeps(registry=ToolRegistry(tools)),
    )


@dataclass(frozen=True)
class RawCall:
    """A call whose arguments are not a dict (JSON text, a list): what a model may send."""

    call_id: str
    name: str
    arguments: Any


def call(tool: str, args: Any = None) -> ToolCallRequest | RawCall:
    """The bus's own call message, or a `RawCall` when the arguments are not a dict."""
    if args is None or isinstance(args, dict):
        return ToolCallRequest(call_id="c-1", name=tool, arguments=args or {})
    return RawCall(call_id="c-1", name=tool, arguments=args)
