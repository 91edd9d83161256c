"""``/mcp``: the MCP server over streamable HTTP (its tools: ``api.http.mcp_tools``).

The API key is the bearer token, as on REST; it is checked before the MCP SDK sees the
request, so a missing, unknown or revoked key is HTTP 401 with ``WWW-Authenticate: Bearer
... error="invalid_token"`` and a JSON-RPC error as the body (code -32600, its message
the API's ``unauthorized`` and what to do), and every request is checked again (a revoked
key stops working within ``api_key_cache_s``).

The server is stateless (no ``Mcp-Session-Id`` kept in the process): each request stands
alone, so any replica behind a load balancer answers any request, as the rest of the API
does. A tool call's progress notifications and result stream back on the response to its
own POST (server-sent events).
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import INVALID_REQUEST
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from api.app import metrics
from api.app.auth import bearer_token
from api.app.errors import ApiError
from api.http.mcp_tools import PRINCIPAL_STATE, build_server

if TYPE_CHECKING:
    from api.app.deps import ApiDeps

PATH = "/mcp"


class McpEndpoint:
    """The ASGI app at ``/mcp``: checks the caller's key, then hands the request to the SDK.

    Args:
        deps: the API's dependencies (the tools act through them).
        version: the API's version, which the server reports.
    """

    def __init__(self, deps: ApiDeps, version: str) -> None:
        self._deps = deps
        self.server = build_server(deps, version)
        # Only the session manager is used (mounted below, run by the API's lifespan).
        # DNS-rebinding protection guards servers that trust the caller's network; this
        # one trusts nothing but the bearer key, which a rebound page cannot send.
        self.server.streamable_http_app(
            stateless_http=True,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self._manager = self.server.session_manager

    def run(self) -> AbstractAsyncContextManager[None]:
        """Serve requests while entered (the app's lifespan holds it)."""
        return self._manager.run()

    def route(self) -> Route:
        """The route to add to the app."""
        return Route(PATH, endpoint=self, methods=["GET", "POST", "DELETE"])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """One HTTP request to ``/mcp``."""
        authorization = Headers(scope=scope).get("authorization")
        try:
            who = await self._deps.auth.authenticate(bearer_token(authorization))
        except ApiError as e:
            metrics.REJECTED.labels(e.code).inc()
            await refused(e)(scope, receive, send)
            return
        scope.setdefault("state", {})[PRINCIPAL_STATE] = who
        await self._manager.handle_request(scope, receive, send)


def refused(error: ApiError) -> JSONResponse:
    """A request without a valid key: HTTP 401 with the bearer challenge, and as its body a
    JSON-RPC error (``id`` null: the body was not read) that MCP clients show as it is."""
    description = error.message.replace('"', "'")
    challenge = f'Bearer realm="agentbus", error="invalid_token", error_description="{description}"'
    message = f"{error.code}: {error.message} ({error.hint})"
    rpc = {"code": INVALID_REQUEST, "message": message, "data": {"code": error.code}}
    body = {"jsonrpc": "2.0", "id": None, "error": rpc}
    return JSONResponse(body, error.status, headers={"WWW-Authenticate": challenge})
