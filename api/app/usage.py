"""What a user or a tenant has spent this day or month, from the budget counters.

The counters are the ones every metered model call settles to (`bus.budget`,
`agents.budget`): exact across processes, kept in Redis for a few days (a day) or two
months (a month) after their last charge.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from agentbus_contracts import UsageReport
from agents.budget import day_of, month_of, tenant_scope, user_scope
from api.app.auth import Principal
from api.app.preferences import Effective

if TYPE_CHECKING:
    from api.app.ports import Ledgers

Period = Literal["day", "month"]
Whose = Literal["user", "tenant"]


def _limits(effective: Effective, period: Period, whose: Whose) -> tuple[int | None, float | None]:
    """The limits a tenant set for this counter (only the user's day and the tenant's
    month have one)."""
    if whose == "user" and period == "day":
        return effective.user_daily_tokens, effective.user_daily_cost_usd
    if whose == "tenant" and period == "month":
        return effective.tenant_monthly_tokens, effective.tenant_monthly_cost_usd
    return None, None


@dataclass(frozen=True, kw_only=True)
class Usage:
    """What callers spent on models, and the limits that apply to them.

    Attributes:
        ledgers: each tenant's spending, as its budget counters hold it.
        effective: a tenant's settings after the overlay (its budgets).
    """

    ledgers: Ledgers
    effective: Callable[[str], Awaitable[Effective]]

    async def report(self, who: Principal, period: Period, whose: Whose) -> UsageReport:
        """:func:`usage_of` with the caller's tenant's limits."""
        effective = await self.effective(who.tenant_id)
        return await usage_of(self.ledgers, effective, who, period, whose)


async def usage_of(
    ledgers: Ledgers, effective: Effective, who: Principal, period: Period, whose: Whose
) -> UsageReport:
    """The caller's own spending (``user``), or its tenant's (``tenant``: admins only).

    Raises:
        AdminOnly: a non-admin asked for the tenant's.
    """
    if whose == "tenant":
        who.require_admin()
    now = time.time()
    scope = user_scope(who.subject, period, now) if whose == "user" else tenant_scope(period, now)
    ledger = ledgers(who.tenant_id)
    spent = await ledger.spent(scope)
    held = await ledger.held(scope)
    limit_tokens, limit_usd = _limits(effective, period, whose)
    since = day_of(now) if period == "day" else f"{month_of(now)}-01"
    return UsageReport(
        period=period,
        scope=whose,
        tenant_id=who.tenant_id,
        subject=who.subject if whose == "user" else None,
        since=since,
        tokens=spent.tokens,
        cost_usd=spent.cost_usd,
        held_tokens=held,
        limit_tokens=limit_tokens,
        limit_cost_usd=limit_usd,
    )
