"""Check 3, risk approval: HIGH and CRITICAL tools need the run's explicit approval."""

from __future__ import annotations

from gateway.call_context import CallPolicy
from gateway.errors import ApprovalRequired
from gateway.spec import Risk, ToolSpec


def check_risk(spec: ToolSpec, policy: CallPolicy) -> None:
    """Refuse a HIGH/CRITICAL tool the run has not approved.

    HIGH needs the run's ``approve_high_risk``. CRITICAL needs that *and* the tool named in
    ``approved_critical_tools``: a blanket switch must never be enough for the worst tools.

    Raises:
        ApprovalRequired: the approval is missing.
    """
    if spec.risk not in (Risk.HIGH, Risk.CRITICAL):
        return
    if not policy.approve_high_risk:
        raise ApprovalRequired(
            f"the tool {spec.name!r} is {spec.risk.value} risk and this run has not approved "
            "high-risk tools"
        )
    if spec.risk is Risk.CRITICAL and spec.name not in policy.approved_critical_tools:
        raise ApprovalRequired(
            f"the tool {spec.name!r} is CRITICAL risk and must be approved by name for this run"
        )
