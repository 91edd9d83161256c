"""Unknown tool and prompt names on ``/mcp`` are protocol errors, as MCP 2025-11-25 says.

The SDK answers a call of an unknown tool with an ``isError`` result, which a model reads
as the tool's own failure, and a request for an unknown prompt with an internal error. The
specification makes both a JSON-RPC error with code -32602 (invalid params), and so does
this middleware, before the SDK looks the name up. A malformed request (no name, not a
string) goes on to the SDK, whose validation answers it.
"""

from __future__ import annotations

from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS


class UnknownNames(ServerMiddleware[Any]):
    """Refuses ``tools/call`` and ``prompts/get`` for a name the server does not have.

    Args:
        server: the server whose tools and prompts are the known names.
    """

    def __init__(self, server: MCPServer) -> None:
        self._server = server

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Check the name of a lookup, then hand the request on."""
        name = ctx.params.get("name") if ctx.params is not None else None
        if isinstance(name, str) and ctx.method in ("tools/call", "prompts/get"):
            kind = "tool" if ctx.method == "tools/call" else "prompt"
            if name not in await self._names(kind):
                raise MCPError(INVALID_PARAMS, f"Unknown {kind}: {name}", {kind: name})
        return await call_next(ctx)

    async def _names(self, kind: str) -> set[str]:
        if kind == "tool":
            return {t.name for t in await self._server.list_tools()}
        return {p.name for p in await self._server.list_prompts()}
