"""The egress client: httpx, pinned to the address the SSRF guard checked, one hop at a time."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from urllib.parse import urljoin

import httpx

from bus import tracing
from gateway.egress.policy import EgressPolicy, EgressReason
from gateway.egress.ssrf import CheckedTarget, check_target, parse_target, system_resolver
from gateway.errors import (
    EgressBlocked,
    HostUndeclared,
    NetworkError,
    ToolTimeout,
    TooManyRedirects,
)
from gateway.hosts import host_matches
from gateway.ports import EgressResponse, Resolver
from gateway.service_token import TOKEN_HEADER

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
# Never carried to another origin on a redirect (what browsers and httpx do too).
_ORIGIN_BOUND = frozenset({"authorization", "cookie", "proxy-authorization"})


class HttpEgressClient:
    """Sends a tool's HTTP requests; implements `gateway.ports.EgressClient`.

    For every request and every redirect hop, in this order: strict URL parse, the tool's
    declared hosts, the tenant allowlist (`EgressPolicy`), then the SSRF guard on every
    address the host resolves to. The connection then goes to the address that was checked
    (the URL is rewritten to that IP, while the ``Host`` header and TLS SNI / certificate
    check keep the real name), so a DNS answer that changes between check and connect
    (rebinding) cannot redirect it. Redirects are followed by hand, at most `max_redirects`.
    The body is read as a stream and cut at `max_response_bytes`; the whole exchange,
    redirects included, must finish within `timeout_s`. No proxy from the environment, no
    cookie jar and no pooled connections (a pooled connection is keyed by IP and could be
    reused for another host name on the same IP).

    Test seam: `resolver` replaces DNS, and `connect_override` maps a *checked* address to
    the address the socket really connects to, keeping the port. A test resolves a made-up
    name to a public address such as ``93.184.216.34`` (which the guard checks and allows)
    and maps ``{"93.184.216.34": "127.0.0.1"}`` to reach its local server.
    The guard still runs on the checked address; a URL naming 127.0.0.1, or a resolver
    answering a private address, is refused as in production. Production code never sets
    `connect_override`.

    Args:
        policy: the tenant's egress allowlist for this call.
        declared_hosts: host patterns the tool declared (``*`` for any).
        resolver: async DNS resolver; the system's by default.
        connect_override: test-only map from checked address to socket address.
        timeout_s: limit for one `request`, redirects included.
        max_response_bytes: body bytes kept; the rest is dropped and `truncated` set.
        max_redirects: redirect hops followed before giving up.
        ssl_context: TLS settings (a test CA); the system's default trust store when None.
        user_agent: the User-Agent header sent.
        allow_private: exact hosts the operator allowed to be private addresses (webhook
            receivers, or a tool's private services, in the deployment's own network; see
            `gateway.egress.ssrf`).
        identity: for a request to one of `allow_private`, the service token naming the
            caller (`gateway.service_token`), given the host; sent as ``X-Agentbus-Identity``.
    """

    def __init__(
        self,
        policy: EgressPolicy,
        *,
        declared_hosts: Sequence[str] = ("*",),
        resolver: Resolver = system_resolver,
        connect_override: Mapping[str, str] | None = None,
        timeout_s: float = 10.0,
        max_response_bytes: int = 1_000_000,
        max_redirects: int = 5,
        ssl_context: ssl.SSLContext | None = None,
        user_agent: str = "agentbus-gateway/0.1",
        allow_private: frozenset[str] = frozenset(),
        identity: Callable[[str], str] | None = None,
    ) -> None:
        self._policy = policy
        self._identity = identity
        self._declared = tuple(declared_hosts)
        self._resolver = resolver
        self._override = dict(connect_override or {})
        self._timeout_s = timeout_s
        self._max_bytes = max_response_bytes
        self._max_redirects = max_redirects
        self._user_agent = user_agent
        self._allow_private = allow_private
        self._transport = httpx.AsyncHTTPTransport(
            verify=ssl_context if ssl_context is not None else True,
            retries=0,
            limits=httpx.Limits(max_connections=16, max_keepalive_connections=0),
        )

    async def __aenter__(self) -> HttpEgressClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close any open connection."""
        await self._transport.aclose()

    async def get(self, url: str, *, headers: Mapping[str, str] | None = None) -> EgressResponse:
        """Shorthand for ``request("GET", url)``."""
        return await self.request("GET", url, headers=headers)

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        content: bytes | None = None,
    ) -> EgressResponse:
        """Send one request, following redirects with every hop checked again.

        Raises:
            HostUndeclared, EgressBlocked, SsrfBlocked, DnsFailed: a hop was refused.
            TooManyRedirects: more than `max_redirects` hops.
            ToolTimeout: the exchange ran past `timeout_s`.
            NetworkError: connecting, TLS or reading failed.
        """
        try:
            async with asyncio.timeout(self._timeout_s):
                return await self._follow(method.upper(), url, dict(headers or {}), content)
        except TimeoutError as e:
            raise ToolTimeout(f"the request to {url} took longer than {self._timeout_s}s") from e
        except httpx.TimeoutException as e:
            raise ToolTimeout(f"the request to {url} timed out") from e
        except httpx.HTTPError as e:
            raise NetworkError(f"the request to {url} failed: {type(e).__name__}") from e

    async def check(self, url: str) -> CheckedTarget:
        """Run every check a hop goes through, without sending anything."""
        target = parse_target(url, self._allow_private)
        tracing.add_event("egress", {"server.address": target.host})
        if not any(host_matches(target.host, p) for p in self._declared):
            raise HostUndeclared(f"this tool may not contact {target.host}")
        decision = self._policy.decide(target.host)
        if not decision.allowed:
            why = (
                "egress is disabled for this tenant"
                if decision.reason is EgressReason.EGRESS_DISABLED
                else "the host is not on this tenant's egress allowlist"
            )
            raise EgressBlocked(f"{target.host} may not be contacted: {why}", host=target.host)
        return await check_target(target, self._resolver, self._allow_private)

    async def _follow(
        self, method: str, url: str, headers: dict[str, str], content: bytes | None
    ) -> EgressResponse:
        start = url
        for _ in range(self._max_redirects + 1):
            checked = await self.check(url)
            response = await self._send(method, checked, headers, content)
            location = response.headers.get("location")
            if response.status_code not in _REDIRECTS or not location:
                return await self._read(checked, response)
            await response.aclose()
            next_url = urljoin(checked.target.url, location)
            if response.status_code == 303 or (
                response.status_code in (301, 302) and method == "POST"
            ):
                method, content = "GET", None
            nxt = parse_target(next_url, self._allow_private)
            cur = checked.target
            if (nxt.scheme, nxt.host, nxt.port) != (cur.scheme, cur.host, cur.port):
                headers = {k: v for k, v in headers.items() if k.lower() not in _ORIGIN_BOUND}
            url = next_url
        raise TooManyRedirects(f"more than {self._max_redirects} redirects starting at {start}")

    async def _send(
        self,
        method: str,
        checked: CheckedTarget,
        headers: dict[str, str],
        content: bytes | None,
    ) -> httpx.Response:
        target = checked.target
        ip = self._override.get(str(checked.address), str(checked.address))
        authority = f"[{ip}]" if ":" in ip else ip
        pinned_url = f"{target.scheme}://{authority}:{target.port}{target.path}"
        sent = {"User-Agent": self._user_agent, "Accept": "*/*"}
        # The caller may not choose Host: it would let a request reach a virtual host the
        # allowlist never saw.
        sent.update({k: v for k, v in headers.items() if k.lower() != "host"})
        sent["Host"] = target.authority
        # Set here, never taken from the caller: only a private service the operator named
        # gets a token, one minted for it (its host is the token's audience).
        sent = {k: v for k, v in sent.items() if k.lower() != TOKEN_HEADER.lower()}
        if self._identity is not None and target.host in self._allow_private:
            sent[TOKEN_HEADER] = self._identity(target.host)
        extensions: dict[str, object] = {
            "timeout": dict.fromkeys(("connect", "read", "write", "pool"), self._timeout_s)
        }
        if target.scheme == "https" and target.ip is None:
            # TLS is negotiated and verified for the real name, not the pinned IP.
            extensions["sni_hostname"] = target.host
        request = httpx.Request(
            method, pinned_url, headers=sent, content=content, extensions=extensions
        )
        response = await self._transport.handle_async_request(request)
        response.request = request
        return response

    async def _read(self, checked: CheckedTarget, response: httpx.Response) -> EgressResponse:
        chunks: list[bytes] = []
        size = 0
        truncated = False
        try:
            async for chunk in response.aiter_bytes():
                if size + len(chunk) > self._max_bytes:
                    chunks.append(chunk[: self._max_bytes - size])
                    truncated = True
                    break
                chunks.append(chunk)
                size += len(chunk)
        finally:
            await response.aclose()
        return EgressResponse(
            url=checked.target.url,
            status_code=response.status_code,
            headers={k.lower(): v for k, v in response.headers.items()},
            content=b"".join(chunks),
            truncated=truncated,
        )
