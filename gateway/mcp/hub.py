"""The gateway's MCP servers: one session per distinct server, tools listed into registries."""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import structlog

from gateway.egress.ssrf import system_resolver
from gateway.errors import GatewayError
from gateway.mcp.connection import McpConnection
from gateway.mcp.tool import McpTool, key_arg_of, spec_for
from gateway.mcp_config.servers import McpServerConfig
from gateway.ports import Resolver, Tool
from gateway.registry import ToolRegistry

log = structlog.get_logger(__name__)


class McpHub:
    """Keeps MCP sessions open and builds each tenant's registry from them.

    Tenants with the same server (equal configs) share one session. A server that fails to
    start is left out of registries (its tools are then unknown to the model) and is not
    tried again for `retry_after_s`, so a broken server costs one timeout, not one per call.
    Tool lists are fetched again after `relist_after_s`.

    Args:
        resolver: DNS for the SSRF guard on HTTP servers.
        connect_override: test-only, see `gateway.egress.client.HttpEgressClient`.
        ssl_context: TLS trust for HTTP servers.
        connect_timeout_s: limit for starting one server.
        retry_after_s: pause before a failed server is tried again.
        relist_after_s: age after which a server's tool list is fetched again.
        clock: monotonic seconds (tests pass their own).
        hidden: paths no stdio server's sandbox shows (see `hide`).
    """

    def __init__(
        self,
        *,
        resolver: Resolver = system_resolver,
        connect_override: Mapping[str, str] | None = None,
        ssl_context: ssl.SSLContext | None = None,
        connect_timeout_s: float = 20.0,
        retry_after_s: float = 30.0,
        relist_after_s: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
        hidden: Sequence[Path] = (),
    ) -> None:
        self._hidden: tuple[Path, ...] = tuple(hidden)
        self._resolver = resolver
        self._override = connect_override
        self._ssl = ssl_context
        self._connect_timeout_s = connect_timeout_s
        self._retry_after_s = retry_after_s
        self._relist_after_s = relist_after_s
        self._clock = clock
        self._connections: dict[str, McpConnection] = {}
        # server key -> (listed at, generation, tools); a new list gets a new generation.
        self._tools: dict[str, tuple[float, int, list[Tool]]] = {}
        self._generation = 0
        self._failed_until: dict[str, float] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._registries: dict[
            tuple[int, tuple[str, ...]], tuple[tuple[int, ...], ToolRegistry]
        ] = {}

    def hide(self, paths: Iterable[Path]) -> None:
        """Never show these paths to a stdio server started from now on (the data folder,
        the store's file), even inside a path its config grants."""
        self._hidden = (*self._hidden, *paths)

    async def tools_of(self, config: McpServerConfig) -> list[Tool]:
        """The server's tools (starting it if needed); empty when it is down."""
        key = config.key
        async with self._locks.setdefault(key, asyncio.Lock()):
            listed = self._tools.get(key)
            conn = self._connections.get(key)
            fresh = listed is not None and self._clock() - listed[0] < self._relist_after_s
            if conn is not None and conn.alive and fresh and listed is not None:
                return listed[2]
            if self._clock() < self._failed_until.get(key, 0.0):
                return []
            try:
                tools = await self._list(config)
            except GatewayError as e:
                log.warning("mcp_server_unavailable", server=config.name, code=e.code, error=str(e))
                self._failed_until[key] = self._clock() + self._retry_after_s
                self._tools.pop(key, None)
                return []
            self._generation += 1
            self._tools[key] = (self._clock(), self._generation, tools)
            return tools

    async def _list(self, config: McpServerConfig) -> list[Tool]:
        conn = self._connections.get(config.key)
        if conn is None or not conn.alive:
            if conn is not None:
                await conn.aclose()
            conn = McpConnection(
                config,
                connect_timeout_s=self._connect_timeout_s,
                resolver=self._resolver,
                connect_override=self._override,
                ssl_context=self._ssl,
                hidden=self._hidden,
            )
            self._connections[config.key] = conn
            await conn.start()
        tools: list[Tool] = []
        for info in await conn.list_tools():
            if config.tools is not None and info.name not in config.tools:
                continue
            spec = spec_for(config, info)
            if spec is not None:
                tools.append(McpTool(spec, info.name, conn, key_arg_of(config, info)))
        return tools

    async def registry_for(
        self, base: ToolRegistry, servers: Sequence[McpServerConfig]
    ) -> ToolRegistry:
        """`base`'s tools plus every tool of `servers` (`base` itself when there are none).

        A server tool whose name is already taken is left out (built-ins win). Registries
        are cached while the tool lists stay the same, so schemas are compiled once.
        """
        if not servers:
            return base
        lists = [await self.tools_of(s) for s in servers]
        cache_key = (id(base), tuple(s.key for s in servers))
        version = tuple(self._tools[s.key][1] if s.key in self._tools else -1 for s in servers)
        cached = self._registries.get(cache_key)
        if cached is not None and cached[0] == version:
            return cached[1]
        registry = ToolRegistry(base.tools())
        for tool in _flatten(lists):
            if tool.spec.name in registry:
                log.warning("mcp_tool_name_taken", tool=tool.spec.name)
                continue
            registry.register(tool)
        self._registries[cache_key] = (version, registry)
        return registry

    async def aclose(self) -> None:
        """Stop every session (and every stdio server process)."""
        connections = list(self._connections.values())
        self._connections.clear()
        self._tools.clear()
        self._registries.clear()
        await asyncio.gather(*(c.aclose() for c in connections), return_exceptions=True)


def _flatten(lists: Iterable[list[Tool]]) -> list[Tool]:
    return [tool for tools in lists for tool in tools]
