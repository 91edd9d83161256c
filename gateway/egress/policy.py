"""The per-tenant egress allowlist: may this call reach this host at all?

The allowlist answers a policy question (did the operator or a human allow this host?).
It is not a security boundary on its own: the SSRF guard (`gateway.egress.ssrf`) always
runs after it, even for ``*``.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, field_validator

from gateway.hosts import canonical_pattern, host_matches


class EgressReason(StrEnum):
    """Why a host was allowed or blocked."""

    APPROVED = "approved"
    ALLOWLISTED = "allowlisted"
    EGRESS_DISABLED = "egress_disabled"
    NOT_ALLOWLISTED = "not_allowlisted"


class EgressDecision(BaseModel):
    """The allowlist's answer for one host.

    Attributes:
        allowed: the request may proceed to the SSRF guard.
        host: the canonical host that was checked (what a human would approve).
        reason: why.
        matched: the allowlist entry that matched, if any.
    """

    model_config = ConfigDict(frozen=True)

    allowed: bool
    host: str
    reason: EgressReason
    matched: str | None = None


def _canonical_set(values: Iterable[str]) -> frozenset[str]:
    return frozenset(canonical_pattern(v) for v in values if v.strip())


class EgressPolicy(BaseModel):
    """A tenant's egress settings (deployment defaults overlaid per tenant, plus run approvals).

    Attributes:
        enabled: egress is on for the tenant. Off by default.
        allowed_hosts: exact hosts, ``*.suffix`` wildcards, or ``*`` for any host.
        approved_hosts: exact hosts a human approved for this run at the egress gate. They
            pass even when `enabled` is off: the approval is the human's explicit allow for
            one host, which is what the gate exists to collect.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = False
    allowed_hosts: frozenset[str] = frozenset()
    approved_hosts: frozenset[str] = frozenset()

    @field_validator("allowed_hosts", "approved_hosts", mode="before")
    @classmethod
    def _canonical(cls, value: Iterable[str]) -> frozenset[str]:
        if isinstance(value, str):
            value = value.split(",")
        return _canonical_set(value)

    @field_validator("approved_hosts")
    @classmethod
    def _approvals_are_exact(cls, value: frozenset[str]) -> frozenset[str]:
        # An approval names the one host that was blocked; a wildcard would widen it silently.
        if any(v.startswith("*") for v in value):
            raise ValueError("approved hosts must be exact hosts, not wildcards")
        return value

    @classmethod
    def from_settings(cls, enabled: bool, allowed_hosts_csv: str) -> EgressPolicy:
        """Build the deployment default from AGENTBUS_EGRESS_ENABLED / ..._ALLOWED_EGRESS_HOSTS."""
        return cls(enabled=enabled, allowed_hosts=frozenset(allowed_hosts_csv.split(",")))

    def overlay(
        self, *, enabled: bool | None = None, allowed_hosts: Iterable[str] | None = None
    ) -> EgressPolicy:
        """A copy with a tenant's own settings replacing the defaults where given."""
        return EgressPolicy(
            enabled=self.enabled if enabled is None else enabled,
            allowed_hosts=self.allowed_hosts if allowed_hosts is None else frozenset(allowed_hosts),
            approved_hosts=self.approved_hosts,
        )

    def decide(self, host: str) -> EgressDecision:
        """Whether a canonical host (see `gateway.egress.ssrf.parse_target`) may be contacted."""
        if host in self.approved_hosts:
            return EgressDecision(allowed=True, host=host, reason=EgressReason.APPROVED)
        if not self.enabled:
            return EgressDecision(allowed=False, host=host, reason=EgressReason.EGRESS_DISABLED)
        # Most specific first, so `matched` names the entry that really allowed the host.
        order = sorted(self.allowed_hosts, key=lambda p: (p == "*", p.startswith("*."), p))
        for pattern in order:
            if host_matches(host, pattern):
                return EgressDecision(
                    allowed=True, host=host, reason=EgressReason.ALLOWLISTED, matched=pattern
                )
        return EgressDecision(allowed=False, host=host, reason=EgressReason.NOT_ALLOWLISTED)
