"""The egress client against a real HTTP(S) server on loopback (httpx is not mocked)."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Callable

import pytest

from gateway.egress.client import HttpEgressClient
from gateway.egress.policy import EgressPolicy
from gateway.errors import (
    EgressBlocked,
    HostUndeclared,
    NetworkError,
    SsrfBlocked,
    ToolTimeout,
    TooManyRedirects,
)
from tests.unit.gateway.local_http import OVERRIDE, PUBLIC_IP, FakeResolver, LocalServer

MakeClient = Callable[..., HttpEgressClient]


def only(*hosts: str) -> EgressPolicy:
    return EgressPolicy(enabled=True, allowed_hosts=frozenset(hosts))


async def test_fetches_through_the_checked_address(
    server: LocalServer, make_client: MakeClient, resolver: FakeResolver
) -> None:
    server.route("/page", body="hello", content_type="text/plain; charset=utf-8")
    async with make_client(only("site.test")) as client:
        response = await client.get(f"http://site.test:{server.port}/page?x=1")
    assert (response.status_code, response.text()) == (200, "hello")
    assert response.url == f"http://site.test:{server.port}/page?x=1"
    assert response.content_type == "text/plain"
    assert server.seen[0].headers["host"] == f"site.test:{server.port}"
    assert server.seen[0].path == "/page?x=1"
    assert resolver.calls == ["site.test"]


async def test_a_host_off_the_allowlist_is_egress_blocked(
    server: LocalServer, make_client: MakeClient
) -> None:
    async with make_client(only("other.test")) as client:
        with pytest.raises(EgressBlocked) as info:
            await client.get(f"http://site.test:{server.port}/")
    assert info.value.host == "site.test"
    assert server.seen == []


async def test_egress_disabled_blocks_with_the_host(make_client: MakeClient) -> None:
    async with make_client(EgressPolicy()) as client:
        with pytest.raises(EgressBlocked, match="disabled") as info:
            await client.get("https://site.test/")
    assert info.value.host == "site.test"


async def test_allow_any_host_still_runs_the_ssrf_guard(
    server: LocalServer, make_client: MakeClient
) -> None:
    server.route("/", body="secret")
    async with make_client(only("*")) as client:
        with pytest.raises(SsrfBlocked):
            await client.get(f"http://127.0.0.1:{server.port}/")
        with pytest.raises(SsrfBlocked):
            await client.get(f"http://localhost:{server.port}/")
    assert server.seen == []


async def test_an_allowed_name_resolving_to_loopback_is_refused(
    server: LocalServer, make_client: MakeClient, resolver: FakeResolver
) -> None:
    resolver.answers["site.test"] = ["127.0.0.1"]
    async with make_client(only("site.test")) as client:
        with pytest.raises(SsrfBlocked, match=r"127\.0\.0\.1"):
            await client.get(f"http://site.test:{server.port}/")
    assert server.seen == []


@pytest.mark.parametrize(
    "location",
    [
        "http://127.0.0.1:{port}/secret",
        "http://169.254.169.254/latest/meta-data/",
        "http://internal.test:{port}/secret",
        "http://[::ffff:127.0.0.1]:{port}/secret",
        "http://2130706433:{port}/secret",
        "file:///etc/passwd",
    ],
)
async def test_a_redirect_from_an_allowed_host_to_a_private_address_is_refused(
    server: LocalServer, make_client: MakeClient, resolver: FakeResolver, location: str
) -> None:
    resolver.answers["internal.test"] = ["10.1.2.3"]
    server.route("/go", status=302, location=location.format(port=server.port))
    server.route("/secret", body="should never be served")
    async with make_client(only("*")) as client:
        with pytest.raises(SsrfBlocked):
            await client.get(f"http://site.test:{server.port}/go")
    assert server.paths() == ["/go"]


async def test_a_redirect_to_a_host_off_the_allowlist_is_egress_blocked(
    server: LocalServer, make_client: MakeClient
) -> None:
    server.route("/go", status=301, location=f"http://other.test:{server.port}/")
    async with make_client(only("site.test")) as client:
        with pytest.raises(EgressBlocked) as info:
            await client.get(f"http://site.test:{server.port}/go")
    assert info.value.host == "other.test"
    assert server.paths() == ["/go"]


async def test_allowed_redirects_are_followed_and_checked_each_hop(
    server: LocalServer, make_client: MakeClient, resolver: FakeResolver
) -> None:
    server.route("/a", status=302, location="/b")
    server.route("/b", status=307, location=f"http://other.test:{server.port}/c")
    server.route("/c", body="done")
    async with make_client(only("site.test", "other.test")) as client:
        response = await client.get(f"http://site.test:{server.port}/a")
    assert response.text() == "done"
    assert response.url == f"http://other.test:{server.port}/c"
    assert server.paths() == ["/a", "/b", "/c"]
    assert resolver.calls == ["site.test", "site.test", "other.test"]
    assert server.seen[2].headers["host"] == f"other.test:{server.port}"


async def test_credentials_are_not_carried_to_another_origin(
    server: LocalServer, make_client: MakeClient
) -> None:
    server.route("/a", status=302, location=f"http://b.test:{server.port}/b")
    server.route("/b", body="ok")
    async with make_client(only("a.test", "b.test")) as client:
        await client.get(f"http://a.test:{server.port}/a", headers={"Authorization": "Bearer x"})
    assert server.seen[0].headers.get("authorization") == "Bearer x"
    assert "authorization" not in server.seen[1].headers


async def test_redirects_are_capped(server: LocalServer, make_client: MakeClient) -> None:
    server.route("/loop", status=302, location="/loop")
    async with make_client(only("site.test"), max_redirects=5) as client:
        with pytest.raises(TooManyRedirects):
            await client.get(f"http://site.test:{server.port}/loop")
    assert len(server.seen) == 6  # the first request and five redirects


async def test_dns_rebinding_cannot_move_the_connection(
    server: LocalServer, make_client: MakeClient, resolver: FakeResolver
) -> None:
    # A rebinding DNS: public for the check, loopback for any later lookup.
    resolver.answers["site.test"] = [[PUBLIC_IP], ["127.0.0.1"]]
    server.route("/", body="reached the checked address")
    async with make_client(only("site.test")) as client:
        response = await client.get(f"http://site.test:{server.port}/")
    assert response.text() == "reached the checked address"
    assert resolver.calls == ["site.test"]  # resolved once; connected to what was checked
    # The next request looks the name up again and gets refused.
    async with make_client(only("site.test")) as client:
        with pytest.raises(SsrfBlocked):
            await client.get(f"http://site.test:{server.port}/")
    assert len(server.seen) == 1


async def test_an_answer_mixing_public_and_private_addresses_is_refused(
    server: LocalServer, make_client: MakeClient, resolver: FakeResolver
) -> None:
    resolver.answers["site.test"] = [PUBLIC_IP, "10.0.0.1"]
    async with make_client(only("site.test")) as client:
        with pytest.raises(SsrfBlocked):
            await client.get(f"http://site.test:{server.port}/")
    assert server.seen == []


async def test_the_caller_cannot_choose_the_host_header(
    server: LocalServer, make_client: MakeClient
) -> None:
    server.route("/", body="ok")
    async with make_client(only("site.test")) as client:
        await client.get(f"http://site.test:{server.port}/", headers={"Host": "admin.internal"})
    assert server.seen[0].headers["host"] == f"site.test:{server.port}"


async def test_the_body_is_capped_while_streaming(
    server: LocalServer, make_client: MakeClient
) -> None:
    server.route("/big", body=b"x" * 200_000)
    async with make_client(only("site.test"), max_response_bytes=1_000) as client:
        response = await client.get(f"http://site.test:{server.port}/big")
    assert response.truncated
    assert len(response.content) == 1_000


async def test_a_slow_server_times_out(server: LocalServer, make_client: MakeClient) -> None:
    def slow(_seen: object) -> tuple[int, dict[str, str], bytes]:
        server.stop.wait(5)  # released at teardown
        return 200, {}, b"late"

    server.routes["/slow"] = slow
    async with make_client(only("site.test"), timeout_s=0.3) as client:
        with pytest.raises(ToolTimeout):
            await client.get(f"http://site.test:{server.port}/slow")


async def test_a_refused_connection_is_a_network_error(make_client: MakeClient) -> None:
    with socket.socket() as probe:  # a port with nothing listening
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with make_client(only("site.test")) as client:
        with pytest.raises(NetworkError):
            await client.get(f"http://site.test:{port}/")


async def test_hosts_the_tool_did_not_declare_are_refused(make_client: MakeClient) -> None:
    async with make_client(only("*"), declared_hosts=("a.test",)) as client:
        with pytest.raises(HostUndeclared):
            await client.get("http://b.test/")


async def test_tls_is_verified_for_the_name_while_connecting_to_the_pinned_ip(
    tls_server: LocalServer, make_client: MakeClient, client_tls: ssl.SSLContext
) -> None:
    tls_server.route("/", body="secure")
    async with make_client(only("secure.test"), ssl_context=client_tls) as client:
        response = await client.get(f"https://secure.test:{tls_server.port}/")
    assert response.text() == "secure"
    assert tls_server.sni == ["secure.test"]


async def test_a_certificate_for_another_name_is_rejected(
    tls_server: LocalServer,
    resolver: FakeResolver,
    client_tls: ssl.SSLContext,
) -> None:
    # site.test is served with secure.test's certificate: pinning must not skip the check.
    client = HttpEgressClient(
        only("site.test"), resolver=resolver, connect_override=OVERRIDE, ssl_context=client_tls
    )
    async with client:
        with pytest.raises(NetworkError):
            await client.get(f"https://site.test:{tls_server.port}/")
    assert tls_server.seen == []
