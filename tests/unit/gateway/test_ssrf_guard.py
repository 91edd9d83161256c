"""The SSRF guard refuses every non-public destination, however it is spelt."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.egress.ssrf import forbidden_reason, guard, parse_target
from gateway.errors import DnsFailed, SsrfBlocked

PUBLIC = "93.184.216.34"

# Names a hostile (or misconfigured) DNS answers with non-public addresses.
DNS = {
    "evil.test": ["10.0.0.5"],
    "metadata.test": ["169.254.169.254"],
    "mixed.test": [PUBLIC, "127.0.0.1"],
    "v6private.test": ["fd12:3456::1"],
    "mapped.test": ["::ffff:10.0.0.1"],
    "cgnat.test": ["100.64.1.1"],
    "linklocal6.test": ["fe80::1"],
    "garbage.test": ["not-an-ip"],
    "good.test": [PUBLIC, "2606:4700::1111"],
}


async def fake_dns(host: str, port: int) -> list[str]:
    if host not in DNS:
        raise OSError("NXDOMAIN")
    return DNS[host]


SSRF_ATTEMPTS = [
    # loopback, in every spelling libc and browsers accept
    "http://127.0.0.1/",
    "http://localhost/",
    "http://LOCALHOST./",
    "http://api.localhost/",
    "http://2130706433/",
    "http://0x7f000001/",
    "http://0x7f.1/",
    "http://0x7f.0x0.0x0.0x1/",
    "http://017700000001/",
    "http://0177.0.0.1/",
    "http://0177.1/",
    "http://127.1/",
    "http://127.0.1/",
    "http://127.0.0.1./",
    "HTTP://127.0.0.1:8080/admin",
    "http://１２７.０.０.１/",
    # unspecified / this network
    "http://0/",
    "http://0.0.0.0/",
    "http://[::]/",
    # private, shared, link-local, cloud metadata
    "http://10.0.0.1/",
    "http://172.16.5.4/",
    "http://192.168.1.1/",
    "http://100.64.0.1/",
    "http://169.254.169.254/latest/meta-data/",
    "http://100.100.100.200/",
    "http://[fd00:ec2::254]/",
    "http://[fc00::1]/",
    "http://[fe80::1]/",
    "http://[fe80::1%25eth0]/",
    # IPv6 loopback and IPv4 smuggled inside IPv6
    "http://[::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:7f00:1]/",
    "http://[::ffff:a9fe:a9fe]/",
    "http://[::127.0.0.1]/",
    "http://[::ffff:0:7f00:1]/",
    "http://[64:ff9b::7f00:1]/",
    "http://[64:ff9b::a9fe:a9fe]/",
    "http://[2002:7f00:1::]/",
    "http://[2002:a00:1::1]/",
    "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
    # multicast, broadcast, reserved, documentation, benchmarking
    "http://224.0.0.1/",
    "http://[ff02::1]/",
    "http://255.255.255.255/",
    "http://240.0.0.1/",
    "http://192.0.2.1/",
    "http://198.51.100.7/",
    "http://[2001:db8::1]/",
    "http://198.18.0.1/",
    # not http(s), userinfo tricks, malformed hosts
    "file:///etc/passwd",
    "gopher://example.com/",
    "ftp://example.com/",
    "dict://127.0.0.1:11211/",
    "http://allowed.example@127.0.0.1/",
    "http://allowed.example:pass@evil.test/",
    "http://127.0.0.1:80@example.com/",
    "http:///etc/passwd",
    "http://",
    "http://evil.test\\@allowed.example/",
    "http:// 127.0.0.1/",
    "http://127.0.0.1\t/",
    "http://%31%32%37.0.0.1/",
    "http://1.2.3.999/",
    "http://example.com:99999/",
    "http://::1/",
    # host names whose DNS answers are not public
    "http://evil.test/",
    "https://metadata.test/latest",
    "http://mixed.test/",
    "http://v6private.test/",
    "http://mapped.test/",
    "http://cgnat.test/",
    "http://linklocal6.test/",
    "http://garbage.test/",
]


def test_the_table_is_big_enough() -> None:
    assert len(SSRF_ATTEMPTS) >= 30
    assert len(set(SSRF_ATTEMPTS)) == len(SSRF_ATTEMPTS)


@pytest.mark.parametrize("url", SSRF_ATTEMPTS)
async def test_ssrf_attempt_is_refused(url: str) -> None:
    with pytest.raises(SsrfBlocked):
        await guard(url, fake_dns)


@pytest.mark.parametrize(
    ("url", "address"),
    [
        ("http://93.184.216.34/", PUBLIC),
        ("https://1572395042/", PUBLIC),  # the decimal spelling of a public address is fine
        ("http://[2606:4700::1111]:8443/x", "2606:4700::1111"),
        ("http://good.test/path?q=1", PUBLIC),
        ("http://[64:ff9b::808:808]/", "64:ff9b::808:808"),  # NAT64 of 8.8.8.8
    ],
)
async def test_public_destinations_pass(url: str, address: str) -> None:
    checked = await guard(url, fake_dns)
    assert str(checked.address) == address


async def test_every_resolved_address_is_kept() -> None:
    checked = await guard("http://good.test/", fake_dns)
    assert [str(a) for a in checked.addresses] == [PUBLIC, "2606:4700::1111"]


async def test_a_name_that_does_not_resolve_is_a_dns_error() -> None:
    with pytest.raises(DnsFailed):
        await guard("http://nowhere.test/", fake_dns)

    async def empty(host: str, port: int) -> list[str]:
        return []

    with pytest.raises(DnsFailed):
        await guard("http://nowhere.test/", empty)


def test_parse_normalises_the_url() -> None:
    target = parse_target("HTTPS://Example.COM.:8443/a/b?c=d#frag")
    assert (target.scheme, target.host, target.port, target.path) == (
        "https",
        "example.com",
        8443,
        "/a/b?c=d",
    )
    assert target.url == "https://example.com:8443/a/b?c=d"
    assert parse_target("http://example.com").path == "/"
    assert parse_target("http://bücher.example/").host == "xn--bcher-kva.example"


def test_ip_spellings_are_canonicalised() -> None:
    assert parse_target("http://1572395042/").host == PUBLIC
    assert parse_target("http://0x5d.0xb8.0xd8.0x22/").host == PUBLIC
    assert parse_target("http://[2606:4700:0::1111]/").authority == "[2606:4700::1111]"


@settings(max_examples=60, deadline=None)
@given(
    net=st.sampled_from(["127.0.0.0/8", "10.0.0.0/8", "169.254.0.0/16", "192.168.0.0/16"]),
    offset=st.integers(min_value=0, max_value=2**16 - 1),
    spelling=st.sampled_from(["dotted", "decimal", "hex", "octal", "v4mapped"]),
)
def test_forbidden_ranges_are_refused_in_any_spelling(net: str, offset: int, spelling: str) -> None:
    network = ipaddress.IPv4Network(net)
    ip = network[offset % network.num_addresses]
    host = {
        "dotted": str(ip),
        "decimal": str(int(ip)),
        "hex": hex(int(ip)),
        "octal": "0" + oct(int(ip))[2:],
        "v4mapped": f"[::ffff:{ip}]",
    }[spelling]
    with pytest.raises(SsrfBlocked):
        parse_target(f"http://{host}/")


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("169.254.169.254", "metadata"),
        ("127.0.0.2", "loopback"),
        ("::ffff:8.8.8.8", "IPv4-mapped"),
        ("2002:7f00:1::", "loopback"),
        ("8.8.8.8", None),
    ],
)
def test_refusals_say_why(address: str, reason: str | None) -> None:
    why = forbidden_reason(ipaddress.ip_address(address))
    if reason is None:
        assert why is None
    else:
        assert why is not None and reason in why
