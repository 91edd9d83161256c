"""``/api/v1/usage``: what the caller (or, for admins, the tenant) spent on models."""

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query

from agentbus_contracts import UsageReport
from api.app.usage import Usage
from api.http.responses import ADMIN, errors
from api.http.routes.common import Caller, use_case

router = APIRouter(prefix="/api/v1/usage", tags=["usage"])

_Usage = Annotated[Usage, Depends(use_case(lambda deps: deps.usage))]


@router.get("", response_model=UsageReport, responses=errors(*ADMIN))
async def get_usage(
    usage: _Usage,
    caller: Caller,
    period: Annotated[Literal["day", "month"], Query(description="This UTC day or month.")] = "day",
    scope: Annotated[
        Literal["user", "tenant"],
        Query(description="user: your own spending; tenant: the tenant's (admin keys)."),
    ] = "user",
) -> UsageReport:
    """Tokens and dollars spent this day or month, held by calls in flight, and the
    limits that apply (the user's daily and the tenant's monthly budget)."""
    return await usage.report(caller, period, scope)
