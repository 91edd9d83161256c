"""The egress proxy of one sandboxed stdio MCP server: HTTP on a unix socket.

The server's sandbox has no network; the socket is bound into it and a relay inside
(`gateway.mcp.egress_relay`) offers it as ``HTTP_PROXY``/``HTTPS_PROXY`` on the sandbox's
own loopback. Two request forms are served, each for one connection:

* ``CONNECT host:port`` (what HTTPS and any TCP client through a proxy send): a tunnel;
* ``GET http://host[:port]/path`` and other methods in absolute form (plain HTTP through a
  proxy): the request goes on in origin form with ``Connection: close``.

Each is admitted by the server's grants and the SSRF guard (`gateway.mcp_config.grants`)
and goes to the address the guard checked; anything else gets a 403 (502 when the host
did not resolve or did not answer) and is logged as ``mcp_egress_refused``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from urllib.parse import urlsplit

import structlog

from gateway.egress.ssrf import CheckedTarget, check_target, parse_target, system_resolver
from gateway.errors import DnsFailed, GatewayError, HostUndeclared
from gateway.hosts import host_matches
from gateway.mcp_config.grants import Grant
from gateway.ports import Resolver

log = structlog.get_logger(__name__)

_HEAD_LIMIT = 16_384
_HEAD_TIMEOUT_S = 10.0
_CONNECT_TIMEOUT_S = 10.0
_MAX_CONNECTIONS = 64
_CHUNK = 65_536
# Hop-by-hop headers of the proxy leg, not forwarded to the origin.
_DROPPED = frozenset({"proxy-connection", "proxy-authorization", "connection", "keep-alive"})


async def admit(grants: Iterable[Grant], host: str, port: int, resolver: Resolver) -> CheckedTarget:
    """The checked address a connection to ``host:port`` may go to.

    Raises:
        HostUndeclared: no grant names this host and port.
        SsrfBlocked: the host is, or resolves to, an address the guard refuses.
        DnsFailed: the host did not resolve.
    """
    grants = tuple(grants)
    exact = frozenset(g.pattern for g in grants if g.exact)
    bracketed = f"[{host}]" if ":" in host and not host.startswith("[") else host
    target = parse_target(f"https://{bracketed}:{port}/", allow_private=exact)
    if not any(g.port == target.port and host_matches(target.host, g.pattern) for g in grants):
        raise HostUndeclared(f"{target.host}:{target.port} is not granted to this MCP server")
    private = exact if target.host in exact else frozenset[str]()
    return await check_target(target, resolver, allow_private=private)


class EgressProxy:
    """An HTTP proxy on a unix socket for one server: `start`, `socket_path`, `aclose`.

    Args:
        server: the MCP server's name (for the log).
        grants: what it may reach.
        resolver: DNS for the SSRF guard.
    """

    def __init__(self, server: str, grants: Sequence[Grant], resolver: Resolver = system_resolver):
        self._server = server
        self._grants = tuple(grants)
        self._resolver = resolver
        self._folder: Path | None = None
        self._listener: asyncio.Server | None = None
        self._slots = asyncio.Semaphore(_MAX_CONNECTIONS)
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def socket_path(self) -> Path:
        """The socket (a private folder's only file); set once started."""
        assert self._folder is not None, "start the proxy first"
        return self._folder / "proxy.sock"

    async def start(self) -> None:
        """Listen on a fresh socket anyone can connect to (the server may run as nobody),
        in a folder only the gateway's user can enter."""
        self._folder = Path(tempfile.mkdtemp(prefix="agentbus-egress-"))
        self._listener = await asyncio.start_unix_server(self._serve, path=self.socket_path)
        os.chmod(self.socket_path, 0o666)

    async def aclose(self) -> None:
        """Stop listening, end open connections and remove the socket's folder."""
        if self._listener is not None:
            self._listener.close()
            with contextlib.suppress(Exception):
                await self._listener.wait_closed()
            self._listener = None
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            async with self._slots:
                await self._one(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async with asyncio.timeout(_HEAD_TIMEOUT_S):
            head = await reader.readuntil(b"\r\n\r\n")
        if len(head) > _HEAD_LIMIT:
            return await _answer(writer, 431, "request head too large")
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3:
            return await _answer(writer, 400, "malformed request line")
        method, target, version = parts
        try:
            host, port, path = _destination(method, target)
        except ValueError as e:
            return await _answer(writer, 400, str(e))
        try:
            checked = await admit(self._grants, host, port, self._resolver)
            async with asyncio.timeout(_CONNECT_TIMEOUT_S):
                up_reader, up_writer = await asyncio.open_connection(str(checked.address), port)
        except GatewayError as e:
            log.warning(
                "mcp_egress_refused", server=self._server, host=host, port=port, code=e.code
            )
            return await _answer(writer, 502 if isinstance(e, DnsFailed) else 403, str(e))
        except (OSError, TimeoutError) as e:
            log.warning(
                "mcp_egress_failed", server=self._server, host=host, port=port, error=repr(e)
            )
            return await _answer(writer, 502, f"{host}:{port} did not answer")
        try:
            if method == "CONNECT":
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                up_writer.write(_origin_form(method, path, version, lines[1:]))
            await _splice(reader, writer, up_reader, up_writer)
        finally:
            up_writer.close()


def _destination(method: str, target: str) -> tuple[str, int, str]:
    """Host, port and origin-form path of a proxy request (path empty for CONNECT)."""
    if method == "CONNECT":
        host, sep, port = target.rpartition(":")
        if not sep or not port.isdigit() or not host:
            raise ValueError("CONNECT takes host:port")
        return host.strip("[]"), int(port), ""
    parts = urlsplit(target)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError("a proxied request names an http:// URL (https goes through CONNECT)")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.hostname, parts.port or 80, path


def _origin_form(method: str, path: str, version: str, headers: list[str]) -> bytes:
    kept = [h for h in headers if h and h.split(":", 1)[0].strip().lower() not in _DROPPED]
    lines = [f"{method} {path} {version}", *kept, "Connection: close", "", ""]
    return "\r\n".join(lines).encode("latin-1")


async def _answer(writer: asyncio.StreamWriter, status: int, reason: str) -> None:
    body = (reason + "\n").encode()
    writer.write(
        f"HTTP/1.1 {status} Refused\r\nContent-Type: text/plain\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    await writer.drain()


async def _splice(
    a_reader: asyncio.StreamReader,
    a_writer: asyncio.StreamWriter,
    b_reader: asyncio.StreamReader,
    b_writer: asyncio.StreamWriter,
) -> None:
    """Copy both ways until both sides have finished sending."""

    async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while chunk := await src.read(_CHUNK):
                dst.write(chunk)
                await dst.drain()
            if dst.can_write_eof():
                dst.write_eof()

    await asyncio.gather(pipe(a_reader, b_writer), pipe(b_reader, a_writer))
