"""Host-name normalisation and allowlist pattern matching.

Shared by the egress policy and SSRF guard, the MCP sandbox grants and the webhooks; below
the ports, so a tenant's policy can carry values that use it.
"""

from __future__ import annotations

import ipaddress
import re

_LABEL = re.compile(r"^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$")


def normalise_name(host: str) -> str:
    """The canonical form of a DNS name: ASCII (IDNA), lower-case, no trailing dot.

    Raises:
        ValueError: `host` is not a syntactically valid DNS name.
    """
    name = host.strip()
    if not name.isascii():
        # IDNA 2003 with nameprep also folds full-width digits and dots ("１２７．０．０．１")
        # to ASCII, so IP spellings hidden in Unicode are caught by the checks that follow.
        try:
            name = name.encode("idna").decode("ascii")
        except UnicodeError as e:
            raise ValueError(f"{host!r} is not a valid host name") from e
    name = name.lower()
    if name.endswith("."):
        name = name[:-1]
    if not name or len(name) > 253 or not all(_LABEL.match(p) for p in name.split(".")):
        raise ValueError(f"{host!r} is not a valid host name")
    return name


def canonical_pattern(pattern: str) -> str:
    """The canonical form of an allowlist entry: ``*``, ``*.example.com``, a name or an IP.

    Raises:
        ValueError: the entry is none of those.
    """
    p = pattern.strip().lower()
    if p == "*":
        return p
    if p.startswith("*."):
        return "*." + normalise_name(p[2:])
    try:
        return str(ipaddress.ip_address(p.strip("[]")))
    except ValueError:
        return normalise_name(p)


def host_matches(host: str, pattern: str) -> bool:
    """True if canonical `host` matches canonical `pattern`.

    ``*`` matches every host; ``*.example.com`` matches any name below example.com but not
    example.com itself (list both when both are meant); anything else must be equal.
    """
    if pattern == "*":
        return True
    if pattern.startswith("*."):
        return host.endswith(pattern[1:])
    return host == pattern
