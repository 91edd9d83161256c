"""Streamable-HTTP MCP servers: the URL passes the SSRF guard and stays pinned to its address.

The URL is checked once per connection (strict parse, every resolved address public), and
every request of the session then goes to the address that was checked, with the real
name kept in the ``Host`` header and for TLS (SNI and certificate), as the egress client
does; a DNS answer that changes later cannot move the session. Requests to any other
origin are refused (the MCP transport only follows same-origin redirects anyway).
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping

import httpx2

from gateway.egress.ssrf import CheckedTarget, check_target, parse_target
from gateway.errors import SsrfBlocked
from gateway.ports import Resolver


class PinnedTransport(httpx2.AsyncBaseTransport):
    """Sends every request of one MCP session to the checked address of its URL.

    Args:
        checked: the URL's target and the address the guard allowed.
        connect_override: test-only map from a checked address to the address really
            connected to (see `gateway.egress.client.HttpEgressClient`).
        ssl_context: TLS trust; the system's when None.
    """

    def __init__(
        self,
        checked: CheckedTarget,
        *,
        connect_override: Mapping[str, str] | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self._target = checked.target
        address = str(checked.address)
        self._ip = dict(connect_override or {}).get(address, address)
        self._inner = httpx2.AsyncHTTPTransport(
            verify=ssl_context if ssl_context is not None else True, trust_env=False, retries=0
        )

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send `request` to the pinned address, or refuse it if it leaves the origin."""
        url = request.url
        t = self._target
        if (url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80)) != (
            t.scheme,
            t.host,
            t.port,
        ):
            raise SsrfBlocked(f"the MCP session may only talk to {t.authority}, not {url.host}")
        request.url = url.copy_with(host=self._ip)
        request.headers["Host"] = t.authority
        if t.scheme == "https" and t.ip is None:
            request.extensions = {**request.extensions, "sni_hostname": t.host}
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        """Close pooled connections."""
        await self._inner.aclose()


async def pinned_client(
    url: str,
    *,
    resolver: Resolver,
    headers: Mapping[str, str],
    connect_override: Mapping[str, str] | None = None,
    ssl_context: ssl.SSLContext | None = None,
    timeout_s: float = 30.0,
) -> httpx2.AsyncClient:
    """An HTTP client for one MCP session at `url`, after the SSRF guard allowed it.

    Raises:
        SsrfBlocked, DnsFailed: the URL is not a public http(s) destination.
    """
    checked = await check_target(parse_target(url), resolver)
    transport = PinnedTransport(checked, connect_override=connect_override, ssl_context=ssl_context)
    return httpx2.AsyncClient(
        transport=transport,
        headers=dict(headers),
        timeout=httpx2.Timeout(timeout_s, read=max(timeout_s, 300.0)),
        trust_env=False,
        follow_redirects=False,
    )
