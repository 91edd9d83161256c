"""Ports of the gateway: tools, their network access, per-tenant policy, the route back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from bus.keys import Role
from bus.run_state import RunSettings
from gateway.mcp_config.servers import McpServerConfig
from gateway.spec import ToolSpec


@dataclass(frozen=True, slots=True)
class EgressResponse:
    """A fully read (and possibly capped) HTTP response.

    Attributes:
        url: the final URL, after redirects, with the real host name (never the pinned IP).
        status_code: the HTTP status of the final response.
        headers: response headers, names lower-cased.
        content: the body, at most the client's byte cap.
        truncated: the body was longer than the cap and was cut.
    """

    url: str
    status_code: int
    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    content: bytes = b""
    truncated: bool = False

    @property
    def content_type(self) -> str:
        """The media type without parameters, lower-cased (``text/html``)."""
        return self.headers.get("content-type", "").split(";")[0].strip().lower()

    def text(self) -> str:
        """The body decoded with the declared charset (UTF-8 by default), never failing."""
        charset = "utf-8"
        for part in self.headers.get("content-type", "").split(";")[1:]:
            name, _, value = part.strip().partition("=")
            if name.lower() == "charset" and value:
                charset = value.strip("\"' ")
        try:
            return self.content.decode(charset, errors="replace")
        except LookupError:  # an unknown charset name from the server
            return self.content.decode("utf-8", errors="replace")


@runtime_checkable
class EgressClient(Protocol):
    """The only way a tool may reach the network: every request is allowlisted and guarded."""

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        content: bytes | None = None,
    ) -> EgressResponse:
        """Send one request (following redirects, each hop checked again) and read the body."""
        ...

    async def get(self, url: str, *, headers: Mapping[str, str] | None = None) -> EgressResponse:
        """Shorthand for ``request("GET", url)``."""
        ...


class ToolInvocation(Protocol):
    """What `gateway.chain.invoke` runs: one call; `bus.commands.ToolCallRequest` is one.

    `arguments` is normally a dict; JSON text of an object is accepted too, and anything
    else is rejected by the input-schema check, so a bad call still gets an outcome.
    """

    @property
    def call_id(self) -> str:
        """Deterministic id of the call (the key for exactly-once effects and audit)."""
        ...

    @property
    def name(self) -> str:
        """The tool the model chose."""
        ...

    @property
    def arguments(self) -> Any:
        """The arguments the model sent."""
        ...


@runtime_checkable
class Tool(Protocol):
    """A tool the gateway can run: a declaration plus one async entry point.

    `run` receives arguments that already passed the input schema, and an egress client
    only if the tool declares hosts. It returns a JSON-able dict matching the output schema,
    or raises `gateway.errors.ToolError` with a message written for the model.
    """

    @property
    def spec(self) -> ToolSpec:
        """The tool's declaration."""
        ...

    async def run(self, args: dict[str, Any], net: EgressClient | None) -> dict[str, Any]:
        """Run the tool once."""
        ...


@dataclass(frozen=True, slots=True)
class Caller:
    """Who a call runs for, for tools whose results depend on it (``search_docs``).

    Attributes:
        tenant_id: the run's tenant.
        subject: the authenticated user behind the run.
        groups: the subject's ACL groups.
        run_id: the run.
        request_id: the call being made: unique within the run, the same when the step
            is delivered again (the gateway step's id and the call's id).
        deadline: the run's deadline (Unix time), if it has one.
        idempotency_key: for a tool that declares ``takes_idempotency_key``, the call's
            key: 64 hex digits derived from tenant, run and call id, the same on every
            delivery of the call (None for other tools). Apply each key at most once.
    """

    tenant_id: str
    subject: str
    groups: frozenset[str] = frozenset()
    run_id: str = ""
    request_id: str = ""
    deadline: float | None = None
    idempotency_key: str | None = None


@runtime_checkable
class CallerAwareTool(Tool, Protocol):
    """A tool that must know the caller (to filter by tenant and ACL).

    The chain calls `run_as` instead of `run` for such a tool; `run` stays for the
    `Tool` protocol and should refuse (it has no caller to filter for).
    """

    async def run_as(
        self, caller: Caller, args: dict[str, Any], net: EgressClient | None
    ) -> dict[str, Any]:
        """Run the tool once on behalf of `caller`."""
        ...


class FaultPoint(Protocol):
    """A test seam the gateway calls at a named point of a call (`api.compose.faults.fault`,
    which a test arms to SIGKILL the process right there, for one of ``tools``); the
    composition root passes it in (`gateway.call_context.GatewayDeps.fault`)."""

    def __call__(self, point: str, /, *tools: str) -> None: ...


def no_fault(point: str, /, *tools: str) -> None:
    """No point is armed: what the gateway calls when nothing passed it the seam."""


class CallGuard(Protocol):
    """Runs before a side-effecting tool does: the at-most-once claim (`gateway.once`)."""

    async def before_run(self, spec: ToolSpec) -> str | None:
        """Claim the call; the idempotency key to run it with (None: the tool takes none).

        Raises:
            gateway.outcome.Settled: the call's outcome is already recorded.
            gateway.errors.OutcomeUnknown: a claim holder died before recording it, and
                the tool takes no key: it must not run again.
        """
        ...


class Resolver(Protocol):
    """Resolves a host name to IP address strings (A and AAAA); injectable so tests own DNS."""

    async def __call__(self, host: str, port: int) -> Sequence[str]:
        """All addresses for `host`; an empty sequence or an `OSError` means it did not resolve."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class TenantPolicy:
    """One tenant's gateway settings: the deployment defaults with the tenant's own on top.

    Attributes:
        enabled_tools: tools the tenant enabled; None means every tool the gateway has.
        egress_enabled: tools may reach the internet at all.
        allowed_egress_hosts: hosts tools may reach (exact, ``*.suffix`` or ``*``); the
            SSRF guard applies whatever this says.
        mcp_servers: the tenant's MCP servers, whose tools join its registry.
        critical_tools: CRITICAL tools the tenant's admin approved; a run may call one only
            if it also asked for it by name.
    """

    enabled_tools: frozenset[str] | None = None
    egress_enabled: bool = False
    allowed_egress_hosts: frozenset[str] = frozenset()
    mcp_servers: tuple[McpServerConfig, ...] = ()
    critical_tools: frozenset[str] = frozenset()

    def overlay(
        self,
        *,
        enabled_tools: frozenset[str] | None = None,
        egress_enabled: bool | None = None,
        allowed_egress_hosts: frozenset[str] | None = None,
        mcp_servers: tuple[McpServerConfig, ...] | None = None,
        critical_tools: frozenset[str] | None = None,
    ) -> TenantPolicy:
        """A copy with the tenant's own settings replacing these where given (not None)."""
        return TenantPolicy(
            enabled_tools=self.enabled_tools if enabled_tools is None else enabled_tools,
            egress_enabled=self.egress_enabled if egress_enabled is None else egress_enabled,
            allowed_egress_hosts=(
                self.allowed_egress_hosts if allowed_egress_hosts is None else allowed_egress_hosts
            ),
            mcp_servers=self.mcp_servers if mcp_servers is None else mcp_servers,
            critical_tools=self.critical_tools if critical_tools is None else critical_tools,
        )


class Route(Protocol):
    """Where a node's output goes next: the agent graph (``agents.graph.next_role``).

    The composition root wires it in, so the gateway sends results back along the graph's
    edges without knowing which agents there are.
    """

    def __call__(self, settings: RunSettings, source: str, outcome: str) -> Role:
        """The role whose stream gets the output of ``source`` on ``outcome``."""
        ...


class TenantPolicies(Protocol):
    """Where the gateway learns each tenant's policy (asked once per batch of calls).

    `gateway.tenants.DeploymentPolicies` gives every tenant the deployment's settings; a
    store-backed implementation overlays each tenant's own (`TenantPolicy.overlay`).

    A stdio MCP server is a command the gateway runs on its own host: an implementation
    must only return commands the operator approved, never one a tenant typed in.
    """

    async def for_tenant(self, tenant_id: str) -> TenantPolicy:
        """The policy in force for `tenant_id` now."""
        ...
