"""Check 3, risk approval: HIGH and CRITICAL tools need explicit approval."""

from __future__ import annotations

from gateway.call_context import CallPolicy
from gateway.errors import ApprovalRequired, CriticalNotApproved
from gateway.spec import Risk, ToolSpec


def check_risk(spec: ToolSpec, policy: CallPolicy) -> None:
    """Refuse a HIGH/CRITICAL tool that has not been approved.

    HIGH needs the run's ``approve_high_risk``. CRITICAL needs two approvals by name, and
    no blanket switch is ever enough: the tenant's admin approved the tool
    (``tenant_critical_tools``) and the run asked for it (``approved_critical_tools``).

    Raises:
        CriticalNotApproved: a CRITICAL tool the tenant has not approved.
        ApprovalRequired: a HIGH tool without the run's approval, or a CRITICAL one the
            run did not ask for.
    """
    if spec.risk is Risk.CRITICAL:
        if spec.name not in policy.tenant_critical_tools:
            raise CriticalNotApproved(
                f"the tool {spec.name!r} is CRITICAL risk and the tenant's admin has not "
                "approved it"
            )
        if spec.name not in policy.approved_critical_tools:
            raise ApprovalRequired(
                f"the tool {spec.name!r} is CRITICAL risk and this run did not ask for it",
                hint="answer without this tool, or tell the user to ask again with "
                f"approve_critical: [{spec.name!r}]",
            )
        return
    if spec.risk is Risk.HIGH and not policy.approve_high_risk:
        raise ApprovalRequired(
            f"the tool {spec.name!r} is HIGH risk and this run has not approved high-risk tools"
        )
