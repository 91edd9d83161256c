"""What a sandboxed stdio MCP server may reach: hosts and ports (its ``sandbox.hosts``).

A ``sandbox.hosts`` entry is ``HOST`` (ports 443 and 80) or ``HOST:PORT``; ``HOST`` is an
exact name, an IP address (IPv6 in brackets when a port follows), ``*.suffix`` or ``*``.
The server has no network of its own: each connection it opens goes through the gateway's
egress proxy (`gateway.mcp.egress_proxy.admit`), which admits it only when a grant names its host
and port, and then only to addresses the SSRF guard accepts, the ones it checked. Exact
hosts are the operator's own naming (a stdio server's config never comes from a tenant), so
they may be private addresses, as with ``AGENTBUS_TOOL_PRIVATE_HOSTS``; a wildcard never
reaches a private address, and a cloud metadata endpoint is never reached.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gateway.hosts import canonical_pattern

#: The ports a host named without one may be reached on.
DEFAULT_PORTS = (443, 80)


@dataclass(frozen=True, slots=True)
class Grant:
    """One host pattern (canonical) and one port it may be reached on."""

    pattern: str
    port: int

    @property
    def exact(self) -> bool:
        """True for a name or an address, False for ``*`` and ``*.suffix``."""
        return not self.pattern.startswith("*")


def parse_grant(entry: str) -> tuple[Grant, ...]:
    """The grants one ``sandbox.hosts`` entry makes.

    Raises:
        ValueError: the entry is not ``HOST`` or ``HOST:PORT`` with a valid host and port.
    """
    text = entry.strip()
    host, port = text, ""
    if text.startswith("["):
        inside, sep, rest = text[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            raise ValueError(f"{entry!r}: an IPv6 address goes in [brackets]")
        host, port = inside, rest[1:]
    elif text.count(":") == 1:
        host, port = text.split(":")
    if port and not (port.isdigit() and 0 < int(port) < 65536):
        raise ValueError(f"{entry!r}: the port must be a number from 1 to 65535")
    pattern = canonical_pattern(host)
    ports = (int(port),) if port else DEFAULT_PORTS
    return tuple(Grant(pattern, p) for p in ports)


def parse_grants(entries: Iterable[str]) -> tuple[Grant, ...]:
    """Every grant of ``sandbox.hosts``, in order, without repeats."""
    found = [g for entry in entries for g in parse_grant(entry)]
    return tuple(dict.fromkeys(found))
