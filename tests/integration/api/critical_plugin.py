"""A test-only CRITICAL tool, loaded through AGENTBUS_TOOL_PLUGINS.

``AGENTBUS_TOOL_PLUGINS=tests.integration.api.critical_plugin:tools``; every real
execution is appended to ``CALLS`` (the gateway runs in the test's process).
"""

from __future__ import annotations

from typing import Any

from gateway.ports import EgressClient, Tool
from gateway.spec import Risk, ToolSpec

CALLS: list[str] = []


class WipeCache:
    """Pretends to wipe a cache: the kind of tool nobody should run by accident."""

    spec = ToolSpec(
        name="wipe_cache",
        description="Wipe the shared cache.",
        input_schema={"type": "object", "properties": {}, "additionalProperties": False},
        output_schema={"type": "object"},
        risk=Risk.CRITICAL,
        side_effects=True,
    )

    async def run(self, args: dict[str, Any], net: EgressClient | None) -> dict[str, Any]:
        CALLS.append("wiped")
        return {"wiped": True}


def tools() -> list[Tool]:
    """The plugin factory."""
    return [WipeCache()]
