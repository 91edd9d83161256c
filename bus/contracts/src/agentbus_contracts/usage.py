"""What a user or a tenant has spent on models this day or month (``GET /api/v1/usage``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agentbus_contracts.base import View


class UsageReport(View):
    """Tokens and dollars spent in one period, with the limits that apply to them."""

    period: Literal["day", "month"]
    scope: Literal["user", "tenant"] = Field(
        description="user: the caller's own spending; tenant: the whole tenant's (admins)."
    )
    tenant_id: str
    subject: str | None = Field(default=None, description="Whose spending (scope user).")
    since: str = Field(description="The period's first day (UTC, YYYY-MM-DD).")
    tokens: int
    cost_usd: float
    held_tokens: int = Field(default=0, description="Tokens held by model calls in flight.")
    limit_tokens: int | None = Field(default=None, description="None: no limit set.")
    limit_cost_usd: float | None = Field(default=None, description="None: no limit set.")
