"""The egress proxy a sandboxed MCP server is given, on its unix socket against real local
servers: a tunnel (CONNECT) and a plain HTTP request reach the granted port; another port,
another name for the host and a malformed request get a refusal, and nothing reaches them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from gateway.egress.ssrf import system_resolver
from gateway.mcp.egress_proxy import EgressProxy
from gateway.mcp_config.grants import parse_grants


async def _http(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    head = await reader.readuntil(b"\r\n\r\n")
    line = head.split(b"\r\n")[0].decode()
    body = f"you asked {line}; close={b'Connection: close' in head}".encode()
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    await writer.drain()
    writer.close()


@pytest.fixture
async def origin() -> AsyncIterator[int]:
    server = await asyncio.start_server(_http, "127.0.0.1", 0)
    try:
        yield int(server.sockets[0].getsockname()[1])
    finally:
        server.close()


@pytest.fixture
async def other() -> AsyncIterator[list[bytes]]:
    """A port no grant names; what reached it is kept."""
    seen: list[bytes] = []

    async def keep(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await reader.read(100))
        writer.close()

    server = await asyncio.start_server(keep, "127.0.0.1", 0)
    seen.append(str(server.sockets[0].getsockname()[1]).encode())
    try:
        yield seen
    finally:
        server.close()


@pytest.fixture
async def proxy(origin: int) -> AsyncIterator[EgressProxy]:
    proxy = EgressProxy("files", parse_grants([f"127.0.0.1:{origin}"]), system_resolver)
    await proxy.start()
    try:
        yield proxy
    finally:
        await proxy.aclose()
    assert not proxy_folder_exists(proxy)


def proxy_folder_exists(proxy: EgressProxy) -> bool:
    try:
        return proxy.socket_path.parent.exists()
    except AssertionError:  # closed: no folder any more
        return False


async def ask(proxy: EgressProxy, head: str, then: bytes = b"") -> bytes:
    reader, writer = await asyncio.open_unix_connection(proxy.socket_path)
    writer.write(head.encode() + then)
    await writer.drain()
    try:
        async with asyncio.timeout(10):
            return await reader.read(-1)
    finally:
        writer.close()


async def test_a_tunnel_and_a_plain_request_reach_the_granted_port(
    proxy: EgressProxy, origin: int
) -> None:
    tunnel = await ask(
        proxy,
        f"CONNECT 127.0.0.1:{origin} HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /through HTTP/1.1\r\nHost: x\r\n\r\n",
    )
    assert tunnel.startswith(b"HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.1 200 OK")
    assert tunnel.endswith(b"you asked GET /through HTTP/1.1; close=False")
    plain = await ask(
        proxy,
        f"GET http://127.0.0.1:{origin}/plain?q=1 HTTP/1.1\r\nHost: x\r\n"
        "Proxy-Authorization: secret\r\nConnection: keep-alive\r\n\r\n",
    )
    assert plain.startswith(b"HTTP/1.1 200 OK")
    assert plain.endswith(b"you asked GET /plain?q=1 HTTP/1.1; close=True")


async def test_another_port_another_name_and_nonsense_are_refused_and_reach_nothing(
    proxy: EgressProxy, origin: int, other: list[bytes]
) -> None:
    port = int(other[0])
    for head in (
        f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n",
        f"GET http://127.0.0.1:{port}/ HTTP/1.1\r\n\r\n",
        f"CONNECT localhost:{origin} HTTP/1.1\r\n\r\n",
        "CONNECT 169.254.169.254:80 HTTP/1.1\r\n\r\n",
    ):
        said = await ask(proxy, head)
        assert said.startswith(b"HTTP/1.1 403 "), (head, said)
    for head in ("CONNECT nowhere HTTP/1.1\r\n\r\n", "GET /relative HTTP/1.1\r\n\r\n", "x\r\n\r\n"):
        assert (await ask(proxy, head)).startswith(b"HTTP/1.1 400 "), head
    await asyncio.sleep(0.1)
    assert other == [str(port).encode()]  # nothing reached the port that was not granted
