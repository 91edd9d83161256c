"""What `gateway.chain.invoke` is called with besides the call: who, their policy, the deps.

`call_context` builds it for a call made for a run, in the one place every caller uses (the
gateway worker for agents' calls, the ``web`` gather source for its search).
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from bus.commands import Command
from bus.run_state import RunState
from gateway.egress.client import HttpEgressClient
from gateway.egress.policy import EgressPolicy
from gateway.egress.private_services import PrivateHosts
from gateway.egress.ssrf import system_resolver
from gateway.ports import Caller, FaultPoint, Resolver, TenantPolicy, no_fault
from gateway.registry import ToolRegistry
from gateway.service_token import ServiceTokens
from gateway.spec import ToolSpec
from gateway.tools.retrieval_tool import reads_declared


class CallPolicy(BaseModel):
    """Who may do what for this call: tenant, agent and run settings, already overlaid.

    Attributes:
        enabled_tools: tools the tenant enabled; None means every registered tool.
        agent_tools: tools this agent may call; None means no per-agent restriction.
        approve_high_risk: the run's "approve high-risk" setting (HIGH tools).
        approved_critical_tools: CRITICAL tools this run asked for by name.
        tenant_critical_tools: CRITICAL tools the tenant's admin approved; a CRITICAL tool
            runs only when it is in both sets.
        egress: the tenant's egress allowlist plus the run's approved hosts.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled_tools: frozenset[str] | None = None
    agent_tools: frozenset[str] | None = None
    approve_high_risk: bool = False
    approved_critical_tools: frozenset[str] = frozenset()
    tenant_critical_tools: frozenset[str] = frozenset()
    egress: EgressPolicy = EgressPolicy()

    def allowing(self, name: str) -> CallPolicy:
        """This policy with ``name`` enabled and allowed to the agent (a client's own tool)."""
        enabled = None if self.enabled_tools is None else self.enabled_tools | {name}
        agent = None if self.agent_tools is None else self.agent_tools | {name}
        return self.model_copy(update={"enabled_tools": enabled, "agent_tools": agent})

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
        private_hosts: per tool, the private services it may reach
            (``AGENTBUS_TOOL_PRIVATE_HOSTS``, `gateway.egress.private_services`).
        service_tokens: signs the token each request to a private service carries.
        fault: the test seam called at the kill points (`FaultPoint`); inert by default.
    """

    registry: ToolRegistry
    resolver: Resolver = system_resolver
    connect_override: Mapping[str, str] | None = None
    ssl_context: ssl.SSLContext | None = None
    max_redirects: int = 5
    max_response_bytes: int = 2_000_000
    private_hosts: PrivateHosts = field(default_factory=dict[str, frozenset[str]])
    service_tokens: ServiceTokens | None = None
    fault: FaultPoint = no_fault

    def egress_client(
        self, spec: ToolSpec, policy: EgressPolicy, caller: Caller | None = None
    ) -> HttpEgressClient:
        """An egress client for one call of the tool `spec`, under `policy`; its requests
        to the tool's private services carry a token naming `caller`."""
        private = self.private_hosts.get(spec.name, frozenset())
        tokens = self.service_tokens
        identity = None
        if private and tokens is not None and caller is not None:
            identity = functools.partial(_mint, tokens, caller, spec.name)
        return HttpEgressClient(
            policy,
            declared_hosts=spec.hosts,
            resolver=self.resolver,
            connect_override=self.connect_override,
            timeout_s=spec.timeout_s,
            max_response_bytes=self.max_response_bytes,
            max_redirects=self.max_redirects,
            ssl_context=self.ssl_context,
            allow_private=private,
            identity=identity,
        )


def _mint(tokens: ServiceTokens, caller: Caller, tool: str, host: str) -> str:
    return tokens.mint(caller, tool=tool, audience=host)


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
        step_id: the gateway step making the call (`Command.step_id`).
    """

    tenant_id: str
    subject: str
    run_id: str
    agent: str
    policy: CallPolicy
    deps: GatewayDeps
    groups: frozenset[str] = frozenset()
    deadline: float | None = None
    step_id: str = ""

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


def run_policy(tenant: TenantPolicy, state: RunState, *, scoped: bool) -> CallPolicy:
    """The chain's policy for a call made for a run: the tenant's settings plus the run's.

    The run adds its high-risk approval, the CRITICAL tools it asked for (which run only
    if the tenant approved them too) and the hosts a person allowed at the egress gate.
    With ``scoped`` (a call a model chose: the researcher's or the fact-check's), the
    tenant's tool scope for multi/custom runs (``researcher_tools``) applies too, whatever
    the model asked for; in a run that follows a team, the tools its declared agent lists
    (the agent the run is at: only declared agents call tools in a team run), less the
    retrieval tools of sources it does not declare (`reads_declared`).
    """
    settings = state.settings
    agent_tools = settings.researcher_tools if scoped and settings.mode != "single" else None
    if scoped and settings.team is not None:
        node = state.team_run.node if state.team_run is not None else None
        listed = settings.team.tools_of(node) if node else frozenset[str]()
        declared = settings.team.sources_of(node) if node else frozenset[str]()
        agent_tools = sorted(t for t in listed if reads_declared(t, declared))
    return CallPolicy(
        enabled_tools=tenant.enabled_tools,
        agent_tools=frozenset(agent_tools) if agent_tools is not None else None,
        approve_high_risk=settings.approve_high_risk,
        approved_critical_tools=frozenset(settings.approve_critical),
        tenant_critical_tools=tenant.critical_tools,
        egress=EgressPolicy(
            enabled=tenant.egress_enabled,
            allowed_hosts=tenant.allowed_egress_hosts,
            approved_hosts=frozenset(state.approved_hosts),
        ),
    )


def call_context(
    command: Command,
    state: RunState,
    tenant: TenantPolicy,
    deps: GatewayDeps,
    *,
    agent: str,
    scoped: bool,
) -> CallContext:
    """The context of a call made for the run of ``command``, by ``agent``.

    Args:
        command: the step the call belongs to (tenant, subject, run, ACL groups).
        state: the run's state (its settings and approved hosts).
        tenant: the tenant's policy.
        deps: the gateway's dependencies (with the tenant's MCP tools, if any).
        agent: who calls, for the audit log and messages.
        scoped: the model chose the call, so the tenant's tool scope applies (`run_policy`).
    """
    return CallContext(
        tenant_id=command.tenant_id,
        subject=command.subject,
        run_id=command.run_id,
        agent=agent,
        policy=run_policy(tenant, state, scoped=scoped),
        deps=deps,
        groups=frozenset(command.groups),
        deadline=command.deadline,
        step_id=command.step_id,
    )
