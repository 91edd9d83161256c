"""Unknown names on ``/mcp`` are protocol errors with the codes of the revision in use.

The SDK answers a call of an unknown tool with an ``isError`` result, which a model reads
as the tool's own failure, and a request for an unknown prompt with an internal error. The
specification makes both a JSON-RPC error with code -32602 (invalid params), and so does
this middleware, before the SDK looks the name up. A malformed request (no name, not a
string) goes on to the SDK, whose validation answers it.

A resource that is not found is -32602 from 2026-07-28 on (the SDK's code), and -32002 in
the revisions before it (2025-11-25's "Resource not found"), so a request made under
2025-11-25 gets that revision's code.
"""

from __future__ import annotations

from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from mcp_types.version import is_version_at_least

#: 2025-11-25's code for a resource that is not found (retired by 2026-07-28).
RESOURCE_NOT_FOUND = -32002
#: The first revision whose resource-not-found code is -32602.
_RESOURCE_CODE_CHANGED = "2026-07-28"


class UnknownNames(ServerMiddleware[Any]):
    """Refuses ``tools/call`` and ``prompts/get`` for a name the server does not have, and
    gives an unknown resource its revision's code.

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
        if ctx.method != "resources/read":
            return await call_next(ctx)
        try:
            return await call_next(ctx)
        except MCPError as e:
            if not _not_found(e) or is_version_at_least(
                ctx.protocol_version, _RESOURCE_CODE_CHANGED
            ):
                raise
            raise MCPError(RESOURCE_NOT_FOUND, "Resource not found", e.data) from e

    async def _names(self, kind: str) -> set[str]:
        if kind == "tool":
            return {t.name for t in await self._server.list_tools()}
        return {p.name for p in await self._server.list_prompts()}


def _not_found(error: MCPError) -> bool:
    """Whether the SDK's error is its resource-not-found (not a malformed request's)."""
    data = error.data
    return error.code == INVALID_PARAMS and isinstance(data, dict) and "uri" in data
