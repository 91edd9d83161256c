"""The per-tenant egress allowlist."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gateway.egress.policy import EgressPolicy, EgressReason


def test_egress_is_off_by_default() -> None:
    decision = EgressPolicy().decide("example.com")
    assert not decision.allowed
    assert decision.reason is EgressReason.EGRESS_DISABLED
    assert decision.host == "example.com"


def test_an_allowlist_does_nothing_while_egress_is_disabled() -> None:
    policy = EgressPolicy(enabled=False, allowed_hosts=frozenset({"*"}))
    assert not policy.decide("example.com").allowed


@pytest.mark.parametrize(
    ("pattern", "host", "allowed"),
    [
        ("example.com", "example.com", True),
        ("example.com", "www.example.com", False),
        ("example.com", "example.com.evil.test", False),
        ("*.example.com", "www.example.com", True),
        ("*.example.com", "a.b.example.com", True),
        ("*.example.com", "example.com", False),
        ("*.example.com", "badexample.com", False),
        ("*", "anything.test", True),
        ("*", "93.184.216.34", True),
        ("EXAMPLE.com.", "example.com", True),
        ("[2606:4700::1111]", "2606:4700::1111", True),
        ("bücher.example", "xn--bcher-kva.example", True),
    ],
)
def test_allowlist_matching(pattern: str, host: str, allowed: bool) -> None:
    policy = EgressPolicy(enabled=True, allowed_hosts=frozenset({pattern}))
    decision = policy.decide(host)
    assert decision.allowed is allowed
    assert decision.reason is (
        EgressReason.ALLOWLISTED if allowed else EgressReason.NOT_ALLOWLISTED
    )


def test_the_most_specific_entry_is_reported() -> None:
    policy = EgressPolicy(enabled=True, allowed_hosts=frozenset({"*", "*.a.test", "x.a.test"}))
    assert policy.decide("x.a.test").matched == "x.a.test"
    assert policy.decide("y.a.test").matched == "*.a.test"
    assert policy.decide("z.test").matched == "*"


def test_from_settings_parses_the_comma_separated_variable() -> None:
    policy = EgressPolicy.from_settings(True, " example.com, *.docs.test ,,")
    assert policy.allowed_hosts == frozenset({"example.com", "*.docs.test"})
    assert policy.decide("api.docs.test").allowed


def test_a_tenant_overlay_replaces_the_defaults_it_sets() -> None:
    default = EgressPolicy.from_settings(False, "example.com")
    tenant = default.overlay(enabled=True)
    assert tenant.decide("example.com").allowed
    narrowed = tenant.overlay(allowed_hosts=["docs.test"])
    assert not narrowed.decide("example.com").allowed
    assert narrowed.decide("docs.test").allowed


def test_a_run_approval_allows_that_one_host_even_with_egress_off() -> None:
    policy = EgressPolicy(approved_hosts=frozenset({"Example.com"}))
    assert policy.decide("example.com").reason is EgressReason.APPROVED
    assert not policy.decide("www.example.com").allowed


def test_approvals_cannot_be_wildcards() -> None:
    with pytest.raises(ValidationError):
        EgressPolicy(approved_hosts=frozenset({"*.example.com"}))


def test_invalid_allowlist_entries_are_rejected() -> None:
    with pytest.raises(ValidationError):
        EgressPolicy(enabled=True, allowed_hosts=frozenset({"exa mple.com"}))
