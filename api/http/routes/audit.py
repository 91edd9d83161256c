"""``GET /api/v1/audit``: read the audit log (tool calls, gate decisions, admins' reads).

A user sees the rows of their own runs and actions (rows whose subject is theirs); an
admin key every row of its tenant. Arguments were redacted before they were stored and
are redacted again on the way out. Newest first; pass ``next_before`` as ``before`` for
the next page.
"""

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from agentbus_contracts.ids import RUN_ID_PATTERN
from api.app.errors import Unavailable
from api.http.routes.common import Audit, Caller
from bus.store import AuditLogRecord
from gateway.redact import redact

router = APIRouter(prefix="/api/v1/audit", tags=["audit"])


class AuditRowView(BaseModel):
    """One row of the tenant's hash-chained audit log."""

    seq: int = Field(description="Position in the tenant's chain.")
    created_at: datetime
    subject: str = Field(description="The user whose run (or action) this row records.")
    run_id: str
    agent: str
    call_id: str
    tool: str
    tool_version: str | None
    args: Any = Field(description="The call's arguments, secrets redacted.")
    status: str
    code: str
    message: str
    blocked_host: str | None
    duration_ms: float
    prev_hash: str
    row_hash: str

    @classmethod
    def of(cls, row: AuditLogRecord) -> "AuditRowView":
        """The view of a stored row, its arguments redacted (again)."""
        fields = row.model_dump(exclude={"id", "tenant_id", "args"})
        return cls(**fields, args=redact(row.args_value()))


class AuditPage(BaseModel):
    """One page of rows, newest first; ``next_before`` is None on the last page."""

    rows: list[AuditRowView]
    next_before: int | None


@router.get("", response_model=AuditPage)
async def list_audit(
    audit: Audit,
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
    if audit is None:
        raise Unavailable("this deployment has no audit log")
    rows = await audit.list(
        caller.scope, limit, before, run_id=run_id, conversation_id=conversation_id
    )
    views = [AuditRowView.of(row) for row in rows]
    return AuditPage(rows=views, next_before=views[-1].seq if len(views) == limit else None)
