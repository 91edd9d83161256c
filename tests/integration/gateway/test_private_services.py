"""A tool reaches the private service the operator named for it, with a signed token the
service (another process, over real HTTP) verifies; every other private address stays
refused, for it and for every other tool."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bus.commands import ToolCallRequest
from gateway.call_context import CallContext, CallPolicy, GatewayDeps
from gateway.chain import invoke
from gateway.egress.policy import EgressPolicy
from gateway.outcome import ToolOutcome
from gateway.ports import Caller, EgressClient
from gateway.registry import ToolRegistry
from gateway.service_token import TOKEN_HEADER, ServiceTokens
from gateway.spec import ToolSpec
from tests.integration.gateway import sensor_service
from tests.processes import free_port
from tests.unit.gateway.local_http import FakeResolver

SERVICE = str(Path(sensor_service.__file__).resolve())
_FETCH_INPUT = {
    "type": "object",
    "properties": {"url": {"type": "string"}},
    "required": ["url"],
    "additionalProperties": False,
}


class Fetch:
    """A plugin tool that GETs a URL through the gateway's egress client."""

    def __init__(self, name: str, hosts: tuple[str, ...]) -> None:
        self.spec = ToolSpec(
            name=name,
            description=f"GET a URL ({', '.join(hosts)}).",
            input_schema=_FETCH_INPUT,
            output_schema={"type": "object"},
            hosts=hosts,
        )

    async def run(self, args: dict[str, Any], net: EgressClient | None) -> dict[str, Any]:
        assert net is not None
        response = await net.get(str(args["url"]))
        return {"status": response.status_code, "body": json.loads(response.content)}


@pytest.fixture
def tokens() -> ServiceTokens:
    return ServiceTokens(b"a deployment signing key of 32+ bytes")


@pytest.fixture
def sensor(tokens: ServiceTokens, tmp_path: Path) -> Iterator[int]:
    """The sensor service in its own process, trusting ``tokens``' public keys; its port."""
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(tokens.jwks()))
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, SERVICE, str(jwks), str(port), "sensor.internal"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        until = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < until and proc.poll() is None, "no sensor service"
                time.sleep(0.05)
        yield port
    finally:
        proc.kill()
        proc.wait(10)


def context(tokens: ServiceTokens, **policy: Any) -> CallContext:
    """Alice (group ops) in run-1, with the operator's private hosts for sensor_lookup."""
    registry = ToolRegistry(
        [
            Fetch("sensor_lookup", ("sensor.internal", "db.internal", "169.254.169.254")),
            Fetch("web_probe", ("*",)),
        ]
    )
    deps = GatewayDeps(
        registry=registry,
        resolver=FakeResolver({"sensor.internal": ["127.0.0.1"], "db.internal": ["127.0.0.1"]}),
        private_hosts={"sensor_lookup": frozenset({"sensor.internal", "169.254.169.254"})},
        service_tokens=tokens,
    )
    egress = policy.pop("egress", EgressPolicy(enabled=True, allowed_hosts=frozenset({"*"})))
    return CallContext(
        tenant_id="t1",
        subject="alice",
        run_id="run-1",
        agent="researcher",
        policy=CallPolicy(egress=egress, **policy),
        deps=deps,
        groups=frozenset({"ops", "field"}),
        step_id="step-7",
    )


async def fetch(ctx: CallContext, tool: str, url: str) -> ToolOutcome:
    request = ToolCallRequest(call_id="c1", name=tool, arguments={"url": url})
    outcome, _ = await invoke(request, ctx)
    return outcome


async def test_the_named_tool_reaches_its_private_service_which_verifies_who_asks(
    tokens: ServiceTokens, sensor: int
) -> None:
    outcome = await fetch(
        context(tokens), "sensor_lookup", f"http://sensor.internal:{sensor}/reading"
    )
    assert outcome.status == "ok", outcome
    assert outcome.result["status"] == 200
    asked_by = outcome.result["body"]["asked_by"]
    assert {k: asked_by[k] for k in ("iss", "aud", "sub", "tenant", "groups", "run", "tool")} == {
        "iss": "agentbus",
        "aud": "sensor.internal",
        "sub": "alice",
        "tenant": "t1",
        "groups": ["field", "ops"],
        "run": "run-1",
        "tool": "sensor_lookup",
    }
    assert asked_by["call"] == "step-7:c1" and asked_by["exp"] - asked_by["iat"] == 60
    assert len(asked_by["jti"]) == 32


async def test_every_other_private_address_stays_refused(
    tokens: ServiceTokens, sensor: int
) -> None:
    ctx = context(tokens)
    # The same tool, another private host the operator did not name for it.
    other = await fetch(ctx, "sensor_lookup", f"http://db.internal:{sensor}/reading")
    # Another tool, the named host: the exemption is the named tool's alone.
    probe = await fetch(ctx, "web_probe", f"http://sensor.internal:{sensor}/reading")
    # A literal loopback address, and a metadata endpoint even when named.
    loopback = await fetch(ctx, "web_probe", f"http://127.0.0.1:{sensor}/reading")
    metadata = await fetch(ctx, "sensor_lookup", "http://169.254.169.254/latest/meta-data/")
    for refused in (other, probe, loopback, metadata):
        assert (refused.status, refused.code) == ("refused", "ssrf_blocked"), refused


async def test_the_tenants_allowlist_still_applies_to_a_private_service(
    tokens: ServiceTokens, sensor: int
) -> None:
    closed = EgressPolicy(enabled=True, allowed_hosts=frozenset({"example.com"}))
    ctx = context(tokens, egress=closed)
    outcome = await fetch(ctx, "sensor_lookup", f"http://sensor.internal:{sensor}/reading")
    assert (outcome.status, outcome.code) == ("egress_blocked", "egress_blocked")


async def test_the_service_refuses_a_missing_or_forged_token(
    tokens: ServiceTokens, sensor: int
) -> None:
    url = f"http://127.0.0.1:{sensor}/reading"
    forged = ServiceTokens(b"somebody else's key, 32 bytes long").mint(
        Caller(tenant_id="t1", subject="alice"), tool="sensor_lookup", audience="sensor.internal"
    )
    other_audience = tokens.mint(
        Caller(tenant_id="t1", subject="alice"), tool="sensor_lookup", audience="db.internal"
    )
    async with httpx.AsyncClient() as http:
        for token in ("", forged, other_audience):
            response = await http.get(url, headers={TOKEN_HEADER: token})
            assert response.status_code == 401, token
            assert response.json()["error"] == "service_token_invalid"
