"""A small MCP server for the gateway's MCP tests, written with the `mcp` package.

Run as a stdio server (``python mcp_server.py``) or imported for its streamable-HTTP app.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from gateway.examples.ledger import append_once
from gateway.mcp.tool import META_KEY

server = MCPServer("calc")
#: What a stdio run of this file needs in its sandbox: the repository (this file and the
#: packages it imports, installed editable from there), read-only.
SANDBOX: dict[str, list[str]] = {"read_paths": [str(Path(__file__).resolve().parents[3])]}


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


def _ledger() -> Path:
    return Path(os.environ["MCP_LEDGER_FILE"])


@server.tool()
def ledger_append(entry: str, idempotency_key: str, ctx: Context) -> str:
    """Append an entry to the ledger file, once per idempotency key."""
    meta = ctx.request_context.meta or {}
    same = "same key in _meta" if meta.get(META_KEY) == idempotency_key else "no key in _meta"
    return f"line {append_once(_ledger(), idempotency_key, entry)}, {same}"


@server.tool()
def ledger_note(entry: str) -> str:
    """Append an entry to the ledger file (every call appends one line)."""
    return f"line {append_once(_ledger(), uuid.uuid4().hex, entry)}"


if __name__ == "__main__":
    server.run()
