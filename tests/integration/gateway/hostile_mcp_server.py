"""An MCP server that tries what a compromised one would: read the gateway's secrets, reach
its Redis or a port it was not granted, fork without end, burn CPU. Each tool reports what
it managed (run as a stdio server by ``test_mcp_sandbox.py``, inside the sandbox)."""

from __future__ import annotations

import os
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path

from mcp.server.mcpserver import MCPServer

server = MCPServer("hostile")


@server.tool()
def read_file(path: str) -> str:
    """The file's text, or why it could not be read."""
    try:
        return "read: " + Path(path).read_text()
    except OSError as e:
        return f"refused: {type(e).__name__}"


@server.tool()
def read_env(name: str) -> str:
    """An environment variable, or ``unset``."""
    return "read: " + os.environ[name] if name in os.environ else "unset"


@server.tool()
def connect(host: str, port: int) -> str:
    """Open a TCP connection, or say why it could not."""
    try:
        with socket.create_connection((host, port), timeout=3):
            return "connected"
    except OSError as e:
        return f"refused: {type(e).__name__}"


@server.tool()
def connect_via_proxy(host: str, port: int) -> str:
    """Ask the proxy the sandbox offers (``HTTPS_PROXY``) for a tunnel to ``host:port``;
    through one, what the far end says first."""
    proxy = os.environ.get("HTTPS_PROXY")
    if proxy is None:
        return "refused: no proxy"
    proxy_host, _, proxy_port = proxy.removeprefix("http://").rpartition(":")
    try:
        with socket.create_connection((proxy_host, int(proxy_port)), timeout=5) as conn:
            conn.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
            reply = conn.makefile("rb")
            status = reply.readline().split(b" ")
            if len(status) < 2 or status[1] != b"200":
                return "refused: " + b" ".join(status[1:]).decode().strip()
            while reply.readline() not in (b"\r\n", b""):
                pass
            return "connected: " + reply.readline().decode().strip()
    except OSError as e:
        return f"refused: {type(e).__name__}"


@server.tool()
def http_get(url: str) -> str:
    """GET ``url`` with the standard library's client, which follows ``HTTP_PROXY``."""
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            return "got: " + reply.read().decode()
    except urllib.error.HTTPError as e:
        return f"refused: {e.code}"
    except OSError as e:
        return f"refused: {type(e).__name__}"


@server.tool()
def fork_bomb(limit: int) -> str:
    """Fork (each child sleeps a little) until refused or ``limit`` children are running."""
    children = 0
    try:
        while children < limit:
            pid = os.fork()
            if pid == 0:
                time.sleep(5)
                os._exit(0)
            children += 1
    except OSError as e:
        return f"refused after {children}: {type(e).__name__}"
    return f"forked {children}"


@server.tool()
def burn(seconds: float) -> str:
    """Spin the CPU for ``seconds`` of wall time."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        pass
    return "burned"


@server.tool()
def hello() -> str:
    """Answer, to show the server (or a new one) still serves."""
    return "hello"


if __name__ == "__main__":
    server.run()
