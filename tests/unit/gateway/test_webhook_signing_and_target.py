"""Webhook signatures (checked with the reference `standardwebhooks` library) and targets."""

from __future__ import annotations

import json
import time

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from gateway.egress.policy import EgressPolicy
from gateway.egress.ssrf import check_target, parse_target
from gateway.errors import EgressBlocked, SsrfBlocked
from gateway.webhooks import signing
from gateway.webhooks.target import precheck, private_hosts
from tests.unit.gateway.local_http import FakeResolver


def test_signatures_verify_with_the_standard_webhooks_library() -> None:
    secret = signing.new_secret()
    body = json.dumps({"type": "run.completed", "data": {"answer": "437 ✓"}}).encode()
    headers = signing.signed_headers(secret, "msg_r1_1-0", int(time.time()), body)

    assert Webhook(secret).verify(body, headers) == json.loads(body)
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(body.replace(b"437", b"438"), headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(signing.new_secret()).verify(body, headers)
    assert secret.startswith("whsec_") and len(signing.secret_key(secret)) == 32


def test_a_malformed_secret_is_refused() -> None:
    for bad in ("abc", "whsec_", "whsec_!!!"):
        with pytest.raises(ValueError):
            signing.secret_key(bad)


def test_named_private_hosts_pass_the_guard_but_metadata_never_does() -> None:
    named = private_hosts("127.0.0.1, hooks.internal,localhost")

    with pytest.raises(SsrfBlocked):
        parse_target("http://127.0.0.1:9000/hook")
    assert parse_target("http://127.0.0.1:9000/hook", named).host == "127.0.0.1"
    assert parse_target("http://localhost:9000/hook", named).host == "localhost"
    with pytest.raises(SsrfBlocked):
        parse_target("http://10.0.0.1/hook", named)  # not named
    with pytest.raises(SsrfBlocked, match="metadata"):
        parse_target("http://169.254.169.254/", private_hosts("169.254.169.254"))
    with pytest.raises(ValueError):
        private_hosts("*.internal")


async def test_a_named_host_may_resolve_private_and_others_may_not() -> None:
    resolver = FakeResolver({"hooks.internal": ["10.1.2.3"], "evil.test": ["10.1.2.3"]})
    named = private_hosts("hooks.internal")

    checked = await check_target(parse_target("http://hooks.internal/h"), resolver, named)
    assert str(checked.address) == "10.1.2.3"
    with pytest.raises(SsrfBlocked):
        await check_target(parse_target("http://evil.test/h"), resolver, named)
    with pytest.raises(SsrfBlocked):
        await check_target(parse_target("http://hooks.internal/h"), resolver)


def test_precheck_applies_the_tenants_allowlist() -> None:
    allowed = EgressPolicy(enabled=True, allowed_hosts=frozenset({"hooks.example.com"}))

    assert precheck("https://HOOKS.example.com/x?y=1", allowed, frozenset()) == (
        "https://hooks.example.com/x?y=1"
    )
    with pytest.raises(EgressBlocked, match="allowlist"):
        precheck("https://other.example.com/x", allowed, frozenset())
    with pytest.raises(EgressBlocked, match="disabled"):
        precheck("https://hooks.example.com/x", EgressPolicy(), frozenset())
    anywhere = EgressPolicy(enabled=True, allowed_hosts=frozenset({"*"}))
    with pytest.raises(SsrfBlocked):
        precheck("http://192.168.1.10/x", anywhere, frozenset())
    with pytest.raises(SsrfBlocked):
        precheck("ftp://hooks.example.com/x", allowed, frozenset())
