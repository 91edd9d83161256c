"""``agentbus mcp``: the MCP tools over stdio, for an assistant or IDE that starts a command.

The stdio server is a thin relay to a running API's ``/mcp`` endpoint (``agentbus up`` or
``agentbus api``), with the API key as its bearer token: listing tools and calling them go
to the API, and the call's progress notifications come back as they arrive. So there is one
implementation of the tools and one way a caller is authenticated (the API's keys, rate
limits, quotas, budgets and audit), whichever transport the assistant speaks; the command
itself holds no state and opens no store.

The API's address is ``--api-url`` or ``AGENTBUS_API_URL`` (default: the local API,
``http://AGENTBUS_API_HOST:AGENTBUS_API_PORT``); the key is ``AGENTBUS_API_KEY``, or else the
local admin key ``agentbus up`` saved (``<data dir>/local-api-key``). Stdout carries the
protocol: logs go to stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

if TYPE_CHECKING:
    from mcp import Client
    from mcp.server.context import ServerRequestContext
    from mcp.types import CallToolRequestParams, CallToolResult, ListToolsResult
    from mcp.types import PaginatedRequestParams as Paged

    from api.settings import ApiSettings


def mcp_cmd(
    api_url: Annotated[
        str | None,
        typer.Option(help="The API to relay to (AGENTBUS_API_URL; default: the local API)."),
    ] = None,
) -> None:
    """Serve agentbus's MCP tools (ask, resume, search_docs) over stdio, through a running API.

    For assistants and IDEs that start an MCP server as a command. The key is
    ``AGENTBUS_API_KEY`` (or the local key ``agentbus up`` saved); the API's own
    streamable-HTTP endpoint is ``/mcp``.
    """
    from api.settings import ApiSettings
    from bus import logs
    from bus.settings import BusSettings

    logs.configure(BusSettings().log_level)  # to stderr: stdout is the protocol's
    logging.getLogger("httpx2").setLevel(logging.WARNING)  # not a line per relayed request
    api = ApiSettings()
    url = (api_url or api.api_url or f"http://{api.api_host}:{api.api_port}").rstrip("/")
    key = _key(api)
    if not key:
        raise typer.BadParameter(
            "no API key: set AGENTBUS_API_KEY, or start `agentbus up` once (it saves a local key)"
        )
    try:
        asyncio.run(relay(f"{url}/mcp", key))
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as e:  # the API is down or refused the key: one line, not a traceback
        typer.echo(f"error: the MCP endpoint {url}/mcp failed: {_cause(e)}", err=True)
        sys.exit(1)


def _cause(error: BaseException) -> str:
    """The innermost error of a (task-group) exception, as one line."""
    while isinstance(error, BaseExceptionGroup):
        error = cast("BaseExceptionGroup[BaseException]", error).exceptions[0]  # never empty
    return f"{type(error).__name__}: {error}"


def _key(api: ApiSettings) -> str | None:
    if api.api_key is not None:
        return api.api_key.get_secret_value()
    from api.compose.local_key import read_local_key

    return read_local_key(api)


async def relay(endpoint: str, key: str) -> None:
    """Serve stdio until the assistant closes it, relaying every tool request to ``endpoint``."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    # No read limit: an answer takes as long as its run (the API sends keep-alive events).
    timeout = httpx2.Timeout(30.0, read=None)
    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout, trust_env=False) as http,
        Client(streamable_http_client(endpoint, http_client=http), cache=None) as remote,
    ):
        tools, call = _handlers(remote)
        info = remote.server_info
        server: Server[Any] = Server(
            info.name if info else "agentbus",
            version=info.version if info else "",
            instructions=remote.instructions,  # the API's, as it gave them
            on_list_tools=tools,
            on_call_tool=call,
        )
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())


def _handlers(remote: Client) -> tuple[Any, Any]:
    """The relay's ``tools/list`` and ``tools/call`` handlers (errors pass through as the
    API's server sent them: an ``isError`` result, or a JSON-RPC error)."""

    async def list_tools(_ctx: ServerRequestContext[Any], params: Paged | None) -> ListToolsResult:
        return await remote.list_tools(cursor=params.cursor if params else None)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult:
        async def forward(progress: float, total: float | None, message: str | None) -> None:
            # Best effort: the client reads notifications in tasks of their own, so the
            # last ones may arrive after the call was answered, when there is no one to tell.
            with contextlib.suppress(Exception):
                await ctx.session.report_progress(progress, total, message)

        return await remote.call_tool(
            params.name, params.arguments or {}, progress_callback=forward
        )

    return list_tools, call_tool
