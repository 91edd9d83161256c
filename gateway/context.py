"""What `gateway.chain.invoke` is called with besides the call: who, their policy, the deps."""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from gateway.egress.client import HttpEgressClient
from gateway.egress.policy import EgressPolicy
from gateway.egress.ssrf import system_resolver
from gateway.ports import Caller, OutcomeHook, Resolver
from gateway.registry import ToolRegistry, ToolSpec


class CallPolicy(BaseModel):
    """Who may do what for this call: tenant, agent and run settings, already overlaid.

    Attributes:
        enabled_tools: tools the tenant enabled; None means every registered tool.
        agent_tools: tools this agent may call; None means no per-agent restriction.
        approve_high_risk: the run's "approve high-risk" setting (HIGH and CRITICAL).
        approved_critical_tools: CRITICAL tools explicitly approved for this run; a CRITICAL
            tool needs both this and `approve_high_risk`.
        egress: the tenant's egress allowlist plus the run's approved hosts.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled_tools: frozenset[str] | None = None
    agent_tools: frozenset[str] | None = None
    approve_high_risk: bool = False
    approved_critical_tools: frozenset[str] = frozenset()
    egress: EgressPolicy = EgressPolicy()

    def may_call(self, name: str) -> bool:
        """True if both the tenant and the agent allow `name` (risk aside)."""
        return (self.enabled_tools is None or name in self.enabled_tools) and (
            self.agent_tools is None or name in self.agent_tools
        )


@dataclass(frozen=True, kw_only=True)
class GatewayDeps:
    """Long-lived dependencies, wired once by the worker's composition root.

    Attributes:
        registry: the tools.
        resolver: DNS for the SSRF guard (tests inject their own).
        connect_override: test-only, see `gateway.egress.client.HttpEgressClient`.
        ssl_context: TLS trust (tests inject a local CA); system default when None.
        max_redirects: redirect hops an egress request may follow.
        max_response_bytes: bytes of a response body kept before it is cut.
        on_outcome: called with an `AuditRecord` after every call (the audit log).
    """

    registry: ToolRegistry
    resolver: Resolver = system_resolver
    connect_override: Mapping[str, str] | None = None
    ssl_context: ssl.SSLContext | None = None
    max_redirects: int = 5
    max_response_bytes: int = 2_000_000
    on_outcome: OutcomeHook | None = field(default=None)

    def egress_client(self, spec: ToolSpec, policy: EgressPolicy) -> HttpEgressClient:
        """An egress client for one call of the tool `spec`, under `policy`."""
        return HttpEgressClient(
            policy,
            declared_hosts=spec.hosts,
            resolver=self.resolver,
            connect_override=self.connect_override,
            timeout_s=spec.timeout_s,
            max_response_bytes=self.max_response_bytes,
            max_redirects=self.max_redirects,
            ssl_context=self.ssl_context,
        )


@dataclass(frozen=True, kw_only=True)
class CallContext:
    """Everything about one call besides the call itself.

    Attributes:
        tenant_id: the tenant the run belongs to.
        subject: the authenticated user behind the run.
        run_id: the run.
        agent: the calling role (``researcher``...).
        policy: permissions, approvals and egress for this call.
        deps: the gateway's dependencies.
        groups: the subject's ACL groups (tools that filter by them see `caller`).
        deadline: the run's deadline (Unix time), for tools that ask other roles.
    """

    tenant_id: str
    subject: str
    run_id: str
    agent: str
    policy: CallPolicy
    deps: GatewayDeps
    groups: frozenset[str] = frozenset()
    deadline: float | None = None

    @property
    def caller(self) -> Caller:
        """Who the call runs for, as a caller-aware tool sees it (the chain adds the call id)."""
        return Caller(
            tenant_id=self.tenant_id,
            subject=self.subject,
            groups=self.groups,
            run_id=self.run_id,
            deadline=self.deadline,
        )
