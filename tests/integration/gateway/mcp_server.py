"""A small MCP server for the gateway's MCP tests, written with the `mcp` package.

Run as a stdio server (``python mcp_server.py``) or imported for its streamable-HTTP app.
"""

from __future__ import annotations

import asyncio
import os

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("calc")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the given reason."""
    raise ToolError(reason)


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return "done"


@server.tool()
def crash() -> str:
    """Exit the server process at once (the gateway must start a new one)."""
    os._exit(1)


if __name__ == "__main__":
    server.run()
