"""Private services a tool may reach: the operator's list of private hosts per tool.

The SSRF guard refuses every private address for every tool. ``AGENTBUS_TOOL_PRIVATE_HOSTS``
names, per tool, the exact hosts (a service inside the deployment's network, say
``sensor.internal``) that tool may reach although they resolve to private addresses; every
other private address stays refused for it, and every private address for every other tool.
Metadata endpoints are never reachable. The host must still be declared by the tool and
allowed by the tenant's egress allowlist, and each request to it carries a service token
(``gateway.service_token``) naming who asks.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from bus.json_values import is_array, is_object
from gateway.errors import ConfigInvalid
from gateway.hosts import canonical_pattern

#: Tool name → the private hosts it may reach.
PrivateHosts = Mapping[str, frozenset[str]]


def parse_private_hosts(text: str) -> dict[str, frozenset[str]]:
    """``{"tool": ["host", ...]}`` from the setting's JSON text (empty: none).

    Raises:
        ConfigInvalid: not a JSON object of lists of exact hosts (no wildcards).
    """
    if not text.strip():
        return {}
    try:
        raw: object = json.loads(text)
    except ValueError as e:
        raise ConfigInvalid(f"AGENTBUS_TOOL_PRIVATE_HOSTS is not JSON: {e}") from e
    if not is_object(raw):
        raise ConfigInvalid('AGENTBUS_TOOL_PRIVATE_HOSTS is a JSON object: {"tool": ["host"]}')
    found: dict[str, frozenset[str]] = {}
    for tool, hosts in raw.items():
        if not is_array(hosts) or not all(isinstance(h, str) for h in hosts):
            raise ConfigInvalid(f"AGENTBUS_TOOL_PRIVATE_HOSTS[{tool!r}] is a list of hosts")
        try:
            canonical = frozenset(canonical_pattern(str(h)) for h in hosts)
        except ValueError as e:
            raise ConfigInvalid(f"AGENTBUS_TOOL_PRIVATE_HOSTS[{tool!r}]: {e}") from e
        if any(h.startswith("*") for h in canonical):
            raise ConfigInvalid("AGENTBUS_TOOL_PRIVATE_HOSTS names exact hosts, not wildcards")
        found[tool] = canonical
    return found
