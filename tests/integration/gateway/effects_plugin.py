"""Test-only tools, loaded by worker processes through AGENTBUS_TOOL_PLUGINS.

``AGENTBUS_TOOL_PLUGINS=tests.integration.gateway.effects_plugin:tools``; the tools write
under AGENTBUS_TEST_EFFECTS_DIR, so a test can count real executions across processes.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from gateway.ports import EgressClient, Tool
from gateway.spec import Risk, ToolSpec

_OUT = {"type": "object"}


def _folder() -> Path:
    return Path(os.environ["AGENTBUS_TEST_EFFECTS_DIR"])


class AppendLine:
    """A side effect: appends its text to effects.log (one line per real execution)."""

    spec = ToolSpec(
        name="append_line",
        description="Append a line to the effects log.",
        input_schema={
            "type": "object",
            "properties": {"text": {"type": "string", "maxLength": 100}},
            "required": ["text"],
            "additionalProperties": False,
        },
        output_schema=_OUT,
        risk=Risk.MEDIUM,
        side_effects=True,
    )

    async def run(self, args: dict[str, Any], net: EgressClient | None) -> dict[str, Any]:
        with (_folder() / "effects.log").open("a") as f:
            f.write(args["text"] + "\n")
            f.flush()
            os.fsync(f.fileno())  # a process killed right after still leaves the line
        return {"appended": args["text"], "pid": os.getpid()}


class WaitForFile:
    """No side effect: waits until a file appears in the effects folder (a slow step)."""

    spec = ToolSpec(
        name="wait_for_file",
        description="Wait until a file exists.",
        input_schema={
            "type": "object",
            "properties": {"name": {"type": "string", "pattern": "^[a-z.]+$"}},
            "required": ["name"],
            "additionalProperties": False,
        },
        output_schema=_OUT,
        timeout_s=30,
    )

    async def run(self, args: dict[str, Any], net: EgressClient | None) -> dict[str, Any]:
        path = _folder() / args["name"]
        for _ in range(600):  # the tool's own 30 s limit, polled
            if path.exists():
                return {"seen": args["name"]}
            await asyncio.sleep(0.05)
        return {"seen": None}


def tools() -> list[Tool]:
    """The plugin factory."""
    return [AppendLine(), WaitForFile()]
