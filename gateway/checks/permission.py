"""Check 2, permission: the tenant enabled the tool and this agent may call it."""

from __future__ import annotations

from gateway.call_context import CallPolicy
from gateway.errors import PermissionDenied
from gateway.spec import ToolSpec


def check_permission(spec: ToolSpec, policy: CallPolicy, agent: str) -> None:
    """Refuse a tool the tenant has not enabled, or one outside this agent's tools.

    Raises:
        PermissionDenied: either list leaves the tool out.
    """
    if policy.enabled_tools is not None and spec.name not in policy.enabled_tools:
        raise PermissionDenied(f"the tool {spec.name!r} is not enabled for this tenant")
    if policy.agent_tools is not None and spec.name not in policy.agent_tools:
        allowed = ", ".join(sorted(policy.agent_tools)) or "none"
        raise PermissionDenied(
            f"the agent {agent!r} may not call {spec.name!r}; its tools are: {allowed}"
        )
