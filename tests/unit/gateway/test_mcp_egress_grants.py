"""What a sandboxed MCP server's ``sandbox.hosts`` grants, and what its egress proxy admits:
the granted host on the granted port, through the SSRF guard's rules."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from pydantic import ValidationError

from gateway.errors import DnsFailed, HostUndeclared, SsrfBlocked
from gateway.mcp.egress_proxy import admit
from gateway.mcp_config.grants import Grant, parse_grant, parse_grants
from gateway.mcp_config.servers import McpSandbox

DNS = {
    "api.example.com": ["93.184.216.34"],
    "svc.example.com": ["10.0.0.7"],  # a wildcard's name that points inside
    "db.internal": ["10.0.0.8"],
    "meta.internal": ["169.254.169.254"],
}


async def dns(host: str, port: int) -> Sequence[str]:
    return DNS.get(host, [])


def test_a_host_alone_is_granted_on_443_and_80_and_a_port_narrows_it() -> None:
    assert parse_grant("API.Example.com.") == (
        Grant("api.example.com", 443),
        Grant("api.example.com", 80),
    )
    assert parse_grant("127.0.0.1:8080") == (Grant("127.0.0.1", 8080),)
    assert parse_grant("[::1]:9000") == (Grant("::1", 9000),)
    assert parse_grant("*.example.com:443") == (Grant("*.example.com", 443),)
    assert parse_grants(["a.example:1", "a.example:1"]) == (Grant("a.example", 1),)


@pytest.mark.parametrize("entry", ["a.example:0", "a.example:70000", "a.example:x", "[::1"])
def test_a_malformed_grant_is_refused_when_the_config_is_read(entry: str) -> None:
    with pytest.raises(ValueError):
        parse_grant(entry)
    with pytest.raises(ValidationError):
        McpSandbox(hosts=(entry,))


async def test_the_granted_host_on_its_port_is_admitted_at_the_checked_address() -> None:
    checked = await admit(parse_grants(["api.example.com:443"]), "api.example.com", 443, dns)
    assert str(checked.address) == "93.184.216.34"


@pytest.mark.parametrize(
    ("host", "port"),
    [("api.example.com", 8443), ("other.example.com", 443), ("93.184.216.35", 443)],
)
async def test_another_port_or_host_is_not_granted(host: str, port: int) -> None:
    with pytest.raises(HostUndeclared, match="not granted"):
        await admit(parse_grants(["api.example.com:443"]), host, port, dns)


async def test_an_exact_private_host_is_the_operators_to_name_a_wildcard_never_reaches_one() -> (
    None
):
    checked = await admit(parse_grants(["db.internal:5432"]), "db.internal", 5432, dns)
    assert str(checked.address) == "10.0.0.8"
    assert str((await admit(parse_grants(["127.0.0.1:81"]), "127.0.0.1", 81, dns)).address) == (
        "127.0.0.1"
    )
    with pytest.raises(SsrfBlocked, match="not a public address"):
        await admit(parse_grants(["*.example.com"]), "svc.example.com", 443, dns)
    with pytest.raises(SsrfBlocked):
        await admit(parse_grants(["*:443"]), "127.0.0.1", 443, dns)


async def test_a_metadata_endpoint_and_localhost_by_another_name_stay_refused() -> None:
    with pytest.raises(SsrfBlocked, match="metadata"):
        await admit(parse_grants(["meta.internal:80"]), "meta.internal", 80, dns)
    with pytest.raises(SsrfBlocked, match="metadata"):
        await admit(parse_grants(["169.254.169.254:80"]), "169.254.169.254", 80, dns)
    with pytest.raises(SsrfBlocked, match="loopback"):
        await admit(parse_grants(["127.0.0.1:81"]), "localhost", 81, dns)
    with pytest.raises(SsrfBlocked):  # 127.1 is 127.0.0.1 spelled otherwise, and refused
        await admit(parse_grants(["*:81"]), "127.1", 81, dns)
    with pytest.raises(DnsFailed):
        await admit(parse_grants(["nowhere.example:443"]), "nowhere.example", 443, dns)
