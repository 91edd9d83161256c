"""``GET /api/v1/audit``: read the audit log (tool calls, gate decisions, admins' reads).

A user sees the rows of their own runs and actions (rows whose subject is theirs); an
admin key every row of its tenant. Arguments were redacted before they were stored and
are redacted again on the way out. Newest first; pass ``next_before`` as ``before`` for
the next page.
"""

from typing import Annotated

from fastapi import APIRouter, Query

from agentbus_contracts.ids import RUN_ID_PATTERN
from api.app.audit_reads import AuditPage
from api.http.routes.common import AuditLog, Caller

router = APIRouter(prefix="/api/v1/audit", tags=["audit"])


@router.get("", response_model=AuditPage)
async def list_audit(
    audit: AuditLog,
    caller: Caller,
    run_id: Annotated[
        str | None, Query(pattern=RUN_ID_PATTERN, description="Only this run's rows.")
    ] = None,
    conversation_id: Annotated[
        str | None,
        Query(pattern=RUN_ID_PATTERN, description="Only the rows of this conversation's runs."),
    ] = None,
    before: Annotated[
        int | None,
        # le: the column is a 64-bit integer; a larger number has no row older than it
        Query(ge=1, le=2**63 - 1, description="Only rows older than this seq (paging)."),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> AuditPage:
    """The caller's audit rows (an admin's: the tenant's), newest first."""
    return await audit.page(caller, limit, before, run_id=run_id, conversation_id=conversation_id)
