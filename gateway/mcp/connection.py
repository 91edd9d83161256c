"""One open session with one MCP server, kept for many calls.

The `mcp` client is an async context manager whose task group must be entered and left
by the same task, so a background task holds it open and calls are made from any task.
A stdio server is a child process of the gateway, in its sandbox (`gateway.mcp.sandbox`);
it is stopped with the session, and so is its egress proxy when it is granted hosts.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import structlog
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, RequestParamsMeta, Tool
from mcp_types.jsonrpc import CONNECTION_CLOSED

from gateway.egress.ssrf import system_resolver
from gateway.errors import GatewayError, McpUnavailable, ToolError
from gateway.mcp import sandbox
from gateway.mcp.egress_proxy import EgressProxy
from gateway.mcp.http import pinned_client
from gateway.mcp_config.grants import parse_grants
from gateway.mcp_config.servers import McpServerConfig
from gateway.ports import Resolver

log = structlog.get_logger(__name__)
_MAX_PAGES = 50  # of tools/list; a server that pages forever cannot hang the gateway


class McpConnection:
    """A session with one server: `start`, then `list_tools` / `call_tool`, then `aclose`.

    Args:
        config: the server.
        connect_timeout_s: limit for starting the server and the protocol handshake.
        resolver: DNS for the SSRF guard (HTTP servers).
        connect_override: test-only, see `gateway.egress.client.HttpEgressClient`.
        ssl_context: TLS trust for HTTP servers; the system's when None.
        hidden: paths a stdio server's sandbox never shows (the data folder, the store).
    """

    def __init__(
        self,
        config: McpServerConfig,
        *,
        connect_timeout_s: float = 20.0,
        resolver: Resolver = system_resolver,
        connect_override: Mapping[str, str] | None = None,
        ssl_context: ssl.SSLContext | None = None,
        hidden: Sequence[Path] = (),
    ) -> None:
        self.config = config
        self._hidden = tuple(hidden)
        self._connect_timeout_s = connect_timeout_s
        self._resolver = resolver
        self._override = connect_override
        self._ssl = ssl_context
        self._client: Client | None = None
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._error: BaseException | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def alive(self) -> bool:
        """True while the session is open."""
        return (
            self._client is not None
            and not self._closing.is_set()
            and self._task is not None
            and not self._task.done()
        )

    async def start(self) -> None:
        """Start the server (stdio) or connect (HTTP) and finish the handshake.

        Raises:
            McpUnavailable: it did not come up within the connect timeout.
            SsrfBlocked, DnsFailed: an HTTP server's URL is not a public destination.
        """
        self._task = asyncio.create_task(self._hold(), name=f"mcp-{self.config.name}")
        try:
            async with asyncio.timeout(self._connect_timeout_s):
                await self._ready.wait()
        except TimeoutError:
            await self.aclose()
            raise McpUnavailable(
                f"the MCP server {self.config.name!r} did not start within "
                f"{self._connect_timeout_s}s"
            ) from None
        if self._client is None:
            error = self._error
            await self.aclose()
            if isinstance(error, GatewayError):
                raise error
            raise McpUnavailable(
                f"the MCP server {self.config.name!r} could not be reached: "
                f"{type(error).__name__}: {error}"
            ) from error

    async def _target(self, stack: contextlib.AsyncExitStack) -> Any:
        cfg = self.config
        if cfg.command is not None:
            bwrap = sandbox.find_bwrap()
            proxy = None
            if cfg.sandbox.hosts and not cfg.unsandboxed and bwrap is not None:
                grants = parse_grants(cfg.sandbox.hosts)
                egress = EgressProxy(cfg.name, grants, resolver=self._resolver)
                await egress.start()
                stack.push_async_callback(egress.aclose)
                proxy = egress.socket_path
            launch = sandbox.launch_for(cfg, hidden=self._hidden, bwrap=bwrap, proxy=proxy)
            if not launch.sandboxed:  # an operator's choice; each call's audit row says so
                log.warning("mcp_server_unsandboxed", server=cfg.name, command=cfg.where)
            return StdioServerParameters(
                command=launch.argv[0], args=launch.argv[1:], env=launch.env
            )
        assert cfg.url is not None
        http = await pinned_client(
            cfg.url,
            resolver=self._resolver,
            headers=cfg.headers,
            connect_override=self._override,
            ssl_context=self._ssl,
            timeout_s=cfg.timeout_s,
        )
        # The transport leaves a client it was given open: closing it is ours to do.
        await stack.enter_async_context(http)
        return streamable_http_client(cfg.url, http_client=http)

    async def _hold(self) -> None:
        try:
            async with contextlib.AsyncExitStack() as stack:
                target = await self._target(stack)
                async with Client(
                    target, read_timeout_seconds=self.config.timeout_s, cache=None
                ) as client:
                    self._client = client
                    self._ready.set()
                    await self._closing.wait()
        except Exception as e:  # whatever broke the session, callers get a clear error
            self._error = e
            if self._client is not None:
                log.warning("mcp_session_lost", server=self.config.name, error=repr(e))
        finally:
            self._client = None
            self._ready.set()

    async def list_tools(self) -> list[Tool]:
        """Every tool the server offers, all pages.

        Raises:
            McpUnavailable: the session is closed or the request failed.
        """
        client = self._live()
        tools: list[Tool] = []
        cursor: str | None = None
        try:
            for _ in range(_MAX_PAGES):
                page = await client.list_tools(cursor=cursor)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if cursor is None:
                    break
        except Exception as e:
            raise self._failed("listing tools", e) from e
        return tools

    async def call_tool(
        self, name: str, arguments: dict[str, Any], *, meta: dict[str, Any] | None = None
    ) -> CallToolResult:
        """Call one tool (``meta``: the request's ``_meta``); the gateway's own timeout wraps
        this (see `gateway.checks.timeout`).

        Raises:
            McpUnavailable: the session is closed, or the server failed to answer.
        """
        client = self._live()
        try:
            if meta is None:
                return await client.call_tool(name, arguments)
            return await client.call_tool(name, arguments, meta=RequestParamsMeta(**meta))
        except MCPError as e:
            if e.code == CONNECTION_CLOSED:
                raise self._failed(f"calling {name!r}", e) from e
            # The server answered, with a protocol error (unknown tool, bad params...).
            raise ToolError(
                f"the MCP server {self.config.name!r} refused the call: {e.message}"
            ) from e
        except (TimeoutError, asyncio.CancelledError):
            raise
        except Exception as e:
            raise self._failed(f"calling {name!r}", e) from e

    def _live(self) -> Client:
        if self._client is None:
            raise McpUnavailable(f"the MCP server {self.config.name!r} is not connected")
        return self._client

    def _failed(self, what: str, e: Exception) -> McpUnavailable:
        # The transport broke (a stdio server exited, the HTTP server went away): end the
        # session, so the hub starts a new one for the next batch instead of reusing this.
        self._closing.set()
        detail = getattr(e, "message", None) or str(e) or type(e).__name__
        return McpUnavailable(f"the MCP server {self.config.name!r} failed {what}: {detail}")

    async def aclose(self) -> None:
        """End the session (a stdio server process is stopped); safe to call twice."""
        self._closing.set()
        if self._task is None:
            return
        try:
            async with asyncio.timeout(10):
                await asyncio.shield(self._task)
        except TimeoutError:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        self._client = None
