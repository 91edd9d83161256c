"""``/mcp``: the MCP server over streamable HTTP (its tools: ``api.http.mcp_tools``).

The API key is the bearer token, as on REST; it is checked before the MCP SDK sees the
request, so a missing, unknown or revoked key is HTTP 401 with ``WWW-Authenticate: Bearer
... error="invalid_token"`` and a JSON-RPC error as the body (code -32600, its message
the API's ``unauthorized`` and what to do), and every request is checked again (a revoked
key stops working when its revocation returns: `api.app.auth`).

Before the key, the Origin and Host headers are checked (MCP's guard against DNS
rebinding, `HostAndOrigin`): a browser's Origin, when present, must be one of the allowed
hosts or of ``api_allowed_origins``, else 403 ``origin_not_allowed`` (MCP's status for it,
so it is checked first); the Host must be one ``mcp_allowed_hosts`` names (loopback by
default), else 421 ``host_not_allowed`` (the SDK's check).

The server is stateless (no ``Mcp-Session-Id`` kept in the process): each request stands
alone, so any replica behind a load balancer answers any request, as the rest of the API
does. A tool call's progress notifications and result stream back on the response to its
own POST (server-sent events).
"""

from __future__ import annotations

import re
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp_types import INVALID_REQUEST
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from api.app import metrics
from api.app.auth import bearer_token
from api.app.errors import ApiError, HostNotAllowed, OriginNotAllowed
from api.http.error_kinds import status_of
from api.http.mcp_names import UnknownNames
from api.http.mcp_tasks import RunTasks
from api.http.mcp_tools import PRINCIPAL_STATE, build_server

if TYPE_CHECKING:
    from api.http.mcp_uses import McpUses
    from api.settings import ApiSettings

PATH = "/mcp"


class McpEndpoint:
    """The ASGI app at ``/mcp``: checks the caller's key, then hands the request to the SDK.

    Args:
        deps: the use cases the tools and task methods call.
        version: the API's version, which the server reports.
    """

    def __init__(self, deps: McpUses, version: str) -> None:
        self._deps = deps
        self.server = build_server(deps, version)
        self.server.middleware.append(UnknownNames(self.server))
        self.server.middleware.append(RunTasks(deps))
        self._guard = HostAndOrigin(deps.settings)
        # Only the session manager is used (mounted below, run by the API's lifespan).
        self.server.streamable_http_app(
            stateless_http=True, transport_security=self._guard.security
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
            await self._guard.check(scope)
            who = await self._deps.auth.authenticate(bearer_token(authorization))
        except ApiError as e:
            metrics.REJECTED.labels(e.code).inc()
            await refused(e)(scope, receive, send)
            return
        scope.setdefault("state", {})[PRINCIPAL_STATE] = who
        await self._manager.handle_request(scope, receive, send)


class HostAndOrigin:
    """MCP's guard against DNS rebinding, checked before the key (so a rebound page learns
    nothing about keys); the SDK checks the same again when the request reaches it.

    Args:
        settings: ``mcp_allowed_hosts`` and ``api_allowed_origins`` are the allowlists.
    """

    def __init__(self, settings: ApiSettings) -> None:
        self.security = transport_security(settings)
        self._sdk = TransportSecurityMiddleware(self.security)

    async def check(self, scope: Scope) -> None:
        """Refuse a request from an Origin (403, which MCP requires whatever the Host) or
        under a Host (421) the settings do not allow."""
        headers = Headers(scope=scope)
        origin = headers.get("origin")
        if origin is not None and not origin_allowed(origin, self.security.allowed_origins):
            raise OriginNotAllowed(f"/mcp does not answer pages of {origin}")
        if await self._sdk.validate_request(Request(scope)) is not None:
            raise HostNotAllowed(f"/mcp does not answer under the Host {headers.get('host')}")


def origin_allowed(origin: str, allowed: list[str]) -> bool:
    """Whether ``origin`` is on the list, matched as the SDK matches it (``scheme://host:*``
    is any port)."""
    return any(origin == a or (a.endswith(":*") and origin.startswith(a[:-1])) for a in allowed)


def transport_security(settings: ApiSettings) -> TransportSecuritySettings:
    """The SDK's Host and Origin allowlists from ``mcp_allowed_hosts`` and
    ``api_allowed_origins`` (whose ``*``, any origin, is the websocket's alone)."""
    hosts: list[str] = []
    for name in (h.strip().lower() for h in settings.mcp_allowed_hosts.split(",")):
        if name:  # a bare name is any port; the SDK's "name:*" needs one, so list both
            hosts += [name] if _PORTED.fullmatch(name) else [name, f"{name}:*"]
    origins = [f"{scheme}://{host}" for host in hosts for scheme in ("http", "https")]
    extra = (o.strip().rstrip("/").lower() for o in settings.api_allowed_origins.split(","))
    origins += [o for o in extra if o and o != "*"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


#: A Host value that names its port (``name:8080``, ``[::1]:*``).
_PORTED = re.compile(r".*:(\d+|\*)")


def refused(error: ApiError) -> JSONResponse:
    """A request refused before the SDK sees it: the error's HTTP status (401 with the
    bearer challenge), and as its body a JSON-RPC error (``id`` null: the body was not
    read) that MCP clients show as it is."""
    message = f"{error.code}: {error.message} ({error.hint})"
    rpc = {"code": INVALID_REQUEST, "message": message, "data": {"code": error.code}}
    body = {"jsonrpc": "2.0", "id": None, "error": rpc}
    headers: dict[str, str] = {}
    status = status_of(error)
    if status == 401:
        description = error.message.replace('"', "'")
        headers["WWW-Authenticate"] = (
            f'Bearer realm="agentbus", error="invalid_token", error_description="{description}"'
        )
    return JSONResponse(body, status, headers=headers)
