"""Check 1, lookup: the called tool must exist."""

from __future__ import annotations

from gateway.call_context import CallPolicy
from gateway.errors import UnknownTool
from gateway.registry import RegisteredTool, ToolRegistry


def lookup(registry: ToolRegistry, name: str, policy: CallPolicy) -> RegisteredTool:
    """The registered tool called `name`.

    Raises:
        UnknownTool: no such tool; the message lists the tools this caller may use, so the
            model can correct a misspelt name.
    """
    if name in registry:
        return registry.get(name)
    available = ", ".join(n for n in registry.names() if policy.may_call(n)) or "none"
    shown = name if len(name) <= 64 else name[:64] + "…"
    raise UnknownTool(f"there is no tool named {shown!r}; available tools: {available}")
