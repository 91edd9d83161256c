"""Errors raised inside the gateway: one root class, each with a stable code and a hint.

Every check in the chain signals a refusal by raising one of these; `gateway.chain.invoke`
turns it into a `ToolOutcome` with the same `status` and `code`, so the model always gets a
typed result and never a traceback. Codes are part of the contract: never reword them.
"""

from __future__ import annotations

from typing import Literal

from bus.errors import CodedError

#: The outcome status an error maps to (see `gateway.outcome.OutcomeStatus`).
ErrorStatus = Literal["error", "refused", "egress_blocked", "client_pending"]


class GatewayError(CodedError):
    """Root of every error the gateway raises.

    Attributes:
        code: a stable, machine-readable code (documented, never reworded).
        status: the outcome status this error becomes: ``error`` (the call failed),
            ``refused`` (policy said no), ``egress_blocked`` (a host needs approval) or
            ``client_pending`` (a client-declared tool: the client runs it).
        hint: what the model, user or operator should do about it.
    """

    code: str = "gateway_error"
    status: ErrorStatus = "error"
    hint: str = ""


class RegistryError(GatewayError):
    """A tool declaration is invalid or its name is already taken (a programming error)."""

    code = "registry_error"
    hint = "fix the tool's declaration; names are unique and schemas must be Draft 2020-12"


class UnknownTool(GatewayError):
    """The called tool is not in the registry."""

    code = "unknown_tool"
    hint = "call one of the tools listed in your tool schemas"


class PermissionDenied(GatewayError):
    """The tenant has not enabled the tool, or this agent may not call it."""

    code = "permission_denied"
    status = "refused"
    hint = "answer without this tool or use one you are allowed to call"


class ApprovalRequired(GatewayError):
    """A HIGH or CRITICAL risk tool was called without the run's approval."""

    code = "approval_required"
    status = "refused"
    hint = "answer without this tool, or tell the user it needs high-risk approval for the run"


class CriticalNotApproved(GatewayError):
    """A CRITICAL tool the run's tenant has not approved (whatever the run asked for)."""

    code = "critical_tool_not_approved"
    status = "refused"
    hint = (
        "answer without this tool; a tenant admin must add it to approved_critical_tools "
        "before any run may use it"
    )


class SchemaInvalid(GatewayError):
    """The call's arguments do not match the tool's input schema."""

    code = "schema_invalid"
    hint = "fix the named arguments and call the tool again"


class OutputInvalid(GatewayError):
    """The tool returned something that does not match its own output schema (a tool bug)."""

    code = "output_invalid"
    hint = "the tool is misbehaving; try another tool or answer without it"


class ToolTimeout(GatewayError):
    """The tool, or one of its network requests, ran past its time limit."""

    code = "timeout"
    hint = "try again with a simpler request, or answer without this tool"


class ToolError(GatewayError):
    """A tool failed; its message is written for the model and is safe to show."""

    code = "tool_error"
    hint = ""


class InvalidArgument(ToolError):
    """Arguments passed the schema but the tool cannot use them (bad timezone, bad maths)."""

    code = "invalid_argument"
    hint = "fix the argument and call the tool again"


class EgressBlocked(GatewayError):
    """The host is not on the tenant's egress allowlist (or egress is off).

    The graph can pause the run and ask a human to approve `host`.
    """

    code = "egress_blocked"
    status = "egress_blocked"
    hint = "the host needs approval before the gateway may contact it"

    def __init__(self, message: str, *, host: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.host = host


class HostUndeclared(GatewayError):
    """The tool tried to reach a host outside the hosts it declared; approval cannot fix it."""

    code = "host_undeclared"
    status = "refused"
    hint = "this tool may only contact the hosts it declares"


class SsrfBlocked(GatewayError):
    """The URL or the address it resolves to is not a public internet destination."""

    code = "ssrf_blocked"
    status = "refused"
    hint = "only public http(s) URLs can be fetched"


class DnsFailed(GatewayError):
    """The host name did not resolve."""

    code = "dns_error"
    hint = "check the host name"


class TooManyRedirects(GatewayError):
    """A request redirected more times than allowed."""

    code = "too_many_redirects"
    hint = "fetch the final URL directly"


class NetworkError(GatewayError):
    """Connecting, TLS or reading the response failed."""

    code = "network_error"
    hint = "the site may be down; try again later or use another source"


class ConfigInvalid(GatewayError):
    """A gateway setting (tool plugins, MCP servers) is malformed; raised at start-up."""

    code = "gateway_config_invalid"
    hint = "fix AGENTBUS_TOOL_PLUGINS or AGENTBUS_MCP_SERVERS and restart the gateway"


class McpUnavailable(ToolError):
    """The MCP server could not be started, reached, or stopped answering."""

    code = "mcp_unavailable"
    hint = "the tool's server is down; try again later or answer without it"


class McpSandboxUnavailable(McpUnavailable):
    """A stdio MCP server cannot be sandboxed here (no bubblewrap), so it is not started."""

    code = "mcp_sandbox_unavailable"
    hint = (
        "install bubblewrap (Debian: apt-get install bubblewrap) on the gateway host, or have "
        "an operator set unsandboxed: true on this server (it then runs with the gateway's rights)"
    )


class OutcomeUnknown(GatewayError):
    """A side-effecting call was claimed by a gateway that stopped before recording how it
    ended; the tool takes no idempotency key, so it is not run a second time."""

    code = "outcome_unknown"
    hint = (
        "the tool may or may not have run: check its effect (or ask the user) before "
        "calling it again"
    )


class ClientToolPending(GatewayError):
    """A client-declared tool passed the checks; the client runs it (the run pauses for it)."""

    code = "client_tool_pending"
    status = "client_pending"
    hint = "the run waits for the client to send the call's result"
