"""Service tokens: minted for a private service, verified by it; sent only there."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable

import pytest

from gateway.egress.client import HttpEgressClient
from gateway.egress.private_services import parse_private_hosts
from gateway.errors import ConfigInvalid
from gateway.ports import Caller
from gateway.service_token import TOKEN_HEADER, ServiceTokenInvalid, ServiceTokens, verify
from tests.unit.gateway.local_http import LocalServer

NOW = 1_800_000_000
ALICE = Caller(tenant_id="t1", subject="alice", groups=frozenset({"ops"}), run_id="r1")


def signer(key: bytes = b"k" * 32) -> ServiceTokens:
    return ServiceTokens(key, clock=lambda: NOW)


def token() -> str:
    return signer().mint(ALICE, tool="sensor_lookup", audience="sensor.internal")


def test_a_token_names_who_asks_for_which_tool_and_service() -> None:
    claims = verify(token(), signer().jwks(), audience="sensor.internal", now=NOW + 30)
    assert (claims["sub"], claims["tenant"], claims["groups"]) == ("alice", "t1", ["ops"])
    assert (claims["run"], claims["tool"]) == ("r1", "sensor_lookup")
    assert claims["aud"] == "sensor.internal"
    assert (claims["iat"], claims["exp"]) == (NOW, NOW + 60)
    assert signer().kid == signer().jwks()["keys"][0]["kid"]
    assert signer().kid != signer(b"j" * 32).kid


def _tampered(text: str) -> str:
    header, claims, signature = text.split(".")
    doc = json.loads(base64.urlsafe_b64decode(claims + "=" * (-len(claims) % 4)))
    doc["sub"] = "root"
    forged = base64.urlsafe_b64encode(json.dumps(doc).encode()).rstrip(b"=").decode()
    return f"{header}.{forged}.{signature}"


@pytest.mark.parametrize(
    ("given", "audience", "now", "why"),
    [
        (token, "sensor.internal", NOW + 66, "expired"),
        (token, "sensor.internal", NOW - 60, "not valid yet"),
        (token, "db.internal", NOW, "not for 'db.internal'"),
        (lambda: _tampered(token()), "sensor.internal", NOW, "does not verify"),
        (
            lambda: signer(b"j" * 32).mint(ALICE, tool="t", audience="sensor.internal"),
            "sensor.internal",
            NOW,
            "key id",
        ),
        (lambda: "not.a-token", "sensor.internal", NOW, "three"),
        (lambda: "e30.e30.AAAA", "sensor.internal", NOW, "alg or typ"),
    ],
)
def test_a_token_that_does_not_hold_is_refused(
    given: Callable[[], str], audience: str, now: int, why: str
) -> None:
    with pytest.raises(ServiceTokenInvalid, match=why):
        verify(given(), signer().jwks(), audience=audience, now=now)


async def test_the_egress_client_sends_a_token_only_to_a_private_service(
    server: LocalServer, make_client: Callable[..., HttpEgressClient]
) -> None:
    server.route("/", body="ok")
    minted: list[str] = []

    def identity(host: str) -> str:
        minted.append(host)
        return f"token-for-{host}"

    client = make_client(allow_private=frozenset({"site.test"}), identity=identity)
    async with client:
        await client.get(f"http://site.test:{server.port}/")
        # A tool cannot send a token of its own making, to any host.
        await client.get(f"http://other.test:{server.port}/", headers={TOKEN_HEADER: "spoof"})
    sent = [s.headers.get(TOKEN_HEADER.lower()) for s in server.seen]
    assert sent == ["token-for-site.test", None] and minted == ["site.test"]


def test_private_hosts_are_exact_hosts_per_tool() -> None:
    parsed = parse_private_hosts('{"sensor_lookup": ["Sensor.Internal", "10.0.0.7"]}')
    assert parsed == {"sensor_lookup": frozenset({"sensor.internal", "10.0.0.7"})}
    assert parse_private_hosts("") == {}
    for bad in ('{"t": ["*.internal"]}', '["sensor.internal"]', '{"t": "x"}', "{"):
        with pytest.raises(ConfigInvalid):
            parse_private_hosts(bad)
