"""The SSRF guard: only public http(s) destinations, decided on the addresses actually used.

It runs on every outbound request and every redirect hop, after the allowlist, whatever
the allowlist says (``*`` included). There is deliberately no switch to turn it off: tests
that need a server on loopback inject a resolver and a connect override into the egress
client instead (see `gateway.egress.client.HttpEgressClient`). The one exception is
``allow_private``: exact hosts an operator named (``AGENTBUS_WEBHOOK_PRIVATE_HOSTS``, for
webhook receivers inside their own network) may be private addresses, never a cloud
metadata endpoint; nothing a tenant sends can add to it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network
from urllib.parse import urlsplit

from gateway.errors import DnsFailed, SsrfBlocked
from gateway.hosts import normalise_name
from gateway.ports import Resolver

IPAddress = IPv4Address | IPv6Address

_V4 = IPv4Network
_V6 = IPv6Network
# Checked before the generic ranges so the refusal names the real reason.
_METADATA = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",
        "169.254.170.2",
        "100.100.100.200",
        "168.63.129.16",
        "fd00:ec2::254",
    )
)
_V4_BLOCKS: tuple[tuple[IPv4Network, str], ...] = (
    (_V4("0.0.0.0/8"), "unspecified"),
    (_V4("10.0.0.0/8"), "private"),
    (_V4("100.64.0.0/10"), "shared address space (CGNAT)"),
    (_V4("127.0.0.0/8"), "loopback"),
    (_V4("169.254.0.0/16"), "link-local"),
    (_V4("172.16.0.0/12"), "private"),
    (_V4("192.0.0.0/24"), "IETF protocol assignments"),
    (_V4("192.0.2.0/24"), "documentation"),
    (_V4("192.88.99.0/24"), "6to4 relay anycast"),
    (_V4("192.168.0.0/16"), "private"),
    (_V4("198.18.0.0/15"), "benchmarking"),
    (_V4("198.51.100.0/24"), "documentation"),
    (_V4("203.0.113.0/24"), "documentation"),
    (_V4("224.0.0.0/4"), "multicast"),
    (_V4("255.255.255.255/32"), "broadcast"),
    (_V4("240.0.0.0/4"), "reserved"),
)
_V6_BLOCKS: tuple[tuple[IPv6Network, str], ...] = (
    (_V6("::/128"), "unspecified"),
    (_V6("::1/128"), "loopback"),
    (_V6("::ffff:0:0/96"), "IPv4-mapped IPv6"),
    (_V6("::ffff:0:0:0/96"), "IPv4-translated IPv6"),
    (_V6("::/96"), "IPv4-compatible IPv6"),
    (_V6("64:ff9b:1::/48"), "local-use NAT64"),
    (_V6("100::/64"), "discard-only"),
    (_V6("2001::/23"), "IETF protocol assignments (Teredo, ORCHID...)"),
    (_V6("2001:db8::/32"), "documentation"),
    (_V6("3fff::/20"), "documentation"),
    (_V6("fc00::/7"), "unique local (private)"),
    (_V6("fe80::/10"), "link-local"),
    (_V6("fec0::/10"), "site-local"),
    (_V6("ff00::/8"), "multicast"),
)
_NAT64 = _V6("64:ff9b::/96")
_NUMERIC_LABEL = re.compile(r"^(?:0x[0-9a-f]*|[0-9]+)$")
_BAD_CHARS = re.compile(r"[\x00-\x20\x7f\\]")


@dataclass(frozen=True, slots=True)
class Target:
    """A strictly parsed http(s) URL.

    Attributes:
        scheme: ``http`` or ``https``.
        host: canonical host: an ASCII lower-case name, or an IP in canonical text form.
        port: explicit or default port.
        path: path and query as given (``/`` when empty); the fragment is dropped.
        ip: the address when the host is an IP literal (in any spelling), else None.
    """

    scheme: str
    host: str
    port: int
    path: str
    ip: IPAddress | None = None

    @property
    def authority(self) -> str:
        """``host[:port]`` as it belongs in a URL or Host header (port omitted if default)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"

    @property
    def url(self) -> str:
        """The normalised URL."""
        return f"{self.scheme}://{self.authority}{self.path}"


@dataclass(frozen=True, slots=True)
class CheckedTarget:
    """A target whose every resolved address passed the guard.

    Attributes:
        target: the parsed URL.
        address: the address the connection must go to (the one that was checked).
        addresses: every address the host resolved to, all of them allowed.
    """

    target: Target
    address: IPAddress
    addresses: tuple[IPAddress, ...]


def forbidden_reason(ip: IPAddress) -> str | None:
    """Why `ip` is not a public internet address, or None if it is."""
    if ip in _METADATA:
        return "cloud metadata endpoint"
    if isinstance(ip, IPv6Address):
        if ip.scope_id:
            return "scoped (zone id) IPv6"
        for net, why in _V6_BLOCKS:
            if ip in net:
                return f"{why} of {ip.ipv4_mapped}" if ip.ipv4_mapped else why
        # Embeddings that route to an IPv4 destination: judge that destination.
        embedded = ip.sixtofour or (IPv4Address(int(ip) & 0xFFFFFFFF) if ip in _NAT64 else None)
        if embedded is not None and (inner := forbidden_reason(embedded)):
            return f"embeds {embedded} ({inner})"
    else:
        for net, why in _V4_BLOCKS:
            if ip in net:
                return why
    if not ip.is_global:  # whatever the stdlib also knows to be non-public
        return "not globally routable"
    return None


def _parse_ipv4(host: str) -> IPv4Address | None:
    """Parse the legacy inet_aton spellings browsers and libc accept (0x7f.1, 017700000001)."""
    parts = host.split(".")
    if len(parts) > 4:
        return None
    nums: list[int] = []
    for part in parts:
        try:
            if part.startswith("0x"):
                nums.append(int(part[2:] or "0", 16))
            elif len(part) > 1 and part.startswith("0"):
                nums.append(int(part, 8))
            else:
                nums.append(int(part, 10))
        except ValueError:
            return None
    *head, last = nums
    if any(n > 255 for n in head) or last >= 256 ** (5 - len(nums)):
        return None
    value = last
    for i, n in enumerate(head):
        value += n << (8 * (3 - i))
    return IPv4Address(value)


def _split_authority(netloc: str) -> tuple[str, str]:
    if netloc.startswith("["):
        host, sep, rest = netloc[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            raise SsrfBlocked("the URL has a malformed IPv6 address")
        return "[" + host + "]", rest[1:]
    if netloc.count(":") > 1:
        raise SsrfBlocked("the URL's host is malformed (an IPv6 address needs [brackets])")
    host, _, port = netloc.partition(":")
    return host, port


def _exempt_reason(ip: IPAddress, exempt: bool) -> str | None:
    """``forbidden_reason``, except that an operator-named private host may be private."""
    why = forbidden_reason(ip)
    if why is None or not exempt or ip in _METADATA:
        return why
    return None


def _parse_host(raw: str, allow_private: frozenset[str]) -> tuple[str, IPAddress | None]:
    if raw.startswith("["):
        try:
            ip6 = IPv6Address(raw[1:-1])
        except ValueError as e:
            raise SsrfBlocked("the URL has an invalid IPv6 address") from e
        if "%" in raw:
            raise SsrfBlocked("IPv6 zone ids are not allowed")
        return str(ip6), ip6
    if "%" in raw:
        raise SsrfBlocked("percent-encoded host names are not allowed")
    try:
        name = normalise_name(raw)
    except ValueError as e:
        raise SsrfBlocked(f"{raw!r} is not a valid host name") from e
    if _NUMERIC_LABEL.match(name.rsplit(".", 1)[-1]):
        # A host whose last label is a number is an IPv4 address in some spelling, never DNS.
        ip4 = _parse_ipv4(name)
        if ip4 is None:
            raise SsrfBlocked(f"{raw!r} is not a valid IPv4 address")
        return str(ip4), ip4
    if (name == "localhost" or name.endswith(".localhost")) and name not in allow_private:
        raise SsrfBlocked(f"{name} is loopback by definition (RFC 6761)")
    return name, None


def parse_target(url: str, allow_private: frozenset[str] = frozenset()) -> Target:
    """Parse `url` strictly, without any network access.

    Refuses non-http(s) schemes, userinfo (``http://allowed@evil``), empty or malformed
    hosts, whitespace, control characters and backslashes (where parsers disagree), and IP
    literals in any spelling that are not public (unless named in `allow_private`). Host
    names are left for `check_target`.

    Raises:
        SsrfBlocked: the URL is not an acceptable public http(s) URL.
    """
    if not url or len(url) > 8192:
        raise SsrfBlocked("the URL must be a non-empty string of at most 8192 characters")
    if _BAD_CHARS.search(url):
        raise SsrfBlocked("the URL contains whitespace, control characters or backslashes")
    try:
        parts = urlsplit(url)
    except ValueError as e:
        raise SsrfBlocked(f"the URL cannot be parsed: {e}") from e
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise SsrfBlocked(f"only http and https URLs are allowed, not {scheme or 'none'!r}")
    if "@" in parts.netloc:
        raise SsrfBlocked("URLs with credentials (user@host) are not allowed")
    raw_host, raw_port = _split_authority(parts.netloc)
    if not raw_host:
        raise SsrfBlocked("the URL has no host")
    host, ip = _parse_host(raw_host, allow_private)
    if not raw_port:
        port = 443 if scheme == "https" else 80
    elif raw_port.isdigit() and 0 < int(raw_port) < 65536:
        port = int(raw_port)
    else:
        raise SsrfBlocked(f"invalid port {raw_port!r}")
    if ip is not None and (why := _exempt_reason(ip, host in allow_private)):
        raise SsrfBlocked(f"{ip} is not a public address ({why})")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target(scheme=scheme, host=host, port=port, path=path, ip=ip)


async def check_target(
    target: Target, resolver: Resolver, allow_private: frozenset[str] = frozenset()
) -> CheckedTarget:
    """Resolve `target` and refuse it if ANY of its addresses is not public.

    A host named in `allow_private` may resolve to private addresses (not metadata ones).

    Raises:
        SsrfBlocked: an address is loopback, private, link-local, metadata, etc.
        DnsFailed: the host did not resolve.
    """
    exempt = target.host in allow_private
    if target.ip is not None:
        if why := _exempt_reason(target.ip, exempt):
            raise SsrfBlocked(f"{target.ip} is not a public address ({why})")
        return CheckedTarget(target=target, address=target.ip, addresses=(target.ip,))
    try:
        answers = await resolver(target.host, target.port)
    except OSError as e:
        raise DnsFailed(f"{target.host} did not resolve") from e
    if not answers:
        raise DnsFailed(f"{target.host} did not resolve")
    addresses: list[IPAddress] = []
    for answer in answers:
        try:
            ip = ipaddress.ip_address(answer)
        except ValueError as e:
            raise SsrfBlocked(f"{target.host} resolved to a malformed address") from e
        if why := _exempt_reason(ip, exempt):
            raise SsrfBlocked(f"{target.host} resolves to {ip}, not a public address ({why})")
        addresses.append(ip)
    return CheckedTarget(target=target, address=addresses[0], addresses=tuple(addresses))


async def guard(url: str, resolver: Resolver) -> CheckedTarget:
    """Parse and check `url` in one step (what every hop of the egress client does)."""
    return await check_target(parse_target(url), resolver)


async def system_resolver(host: str, port: int) -> Sequence[str]:
    """Resolve with the operating system (A and AAAA records), keeping the answer order."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))
