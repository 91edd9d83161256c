"""Check 6, timeout: a tool call gets `timeout_s` of wall time, then it is cancelled."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from gateway.errors import ToolTimeout
from gateway.ports import Caller, CallerAwareTool, EgressClient, Tool

_AWARE: dict[type, bool] = {}


def _caller_aware(tool: Tool) -> bool:
    # A runtime Protocol check walks the object's attributes each time: once per tool
    # class is enough (a tool's methods come from its class).
    aware = _AWARE.get(type(tool))
    if aware is None:
        aware = _AWARE[type(tool)] = isinstance(tool, CallerAwareTool)
    return aware


async def run_with_timeout(
    tool: Tool,
    args: dict[str, Any],
    net: EgressClient | None,
    timeout_s: float,
    caller: Caller | None = None,
) -> Any:
    """Run `tool` once under `timeout_s` (a `CallerAwareTool` via `run_as(caller, ...)`).

    Raises:
        ToolTimeout: the limit passed. A `TimeoutError` the tool raises on its own account
            propagates unchanged (it is the tool's failure, not the gateway's deadline).
    """
    deadline = asyncio.timeout(timeout_s)
    try:
        async with deadline:
            if caller is not None and _caller_aware(tool):
                return await cast(CallerAwareTool, tool).run_as(caller, args, net)
            return await tool.run(args, net)
    except TimeoutError as e:
        if deadline.expired():
            raise ToolTimeout(
                f"the tool {tool.spec.name!r} did not finish within {timeout_s}s"
            ) from e
        raise
