"""``GET /api/v1/activity``: a conversation's audit rows and the audit chain's verification.

The web page's Activity panel. Admin keys only (the chain is the tenant's); an admin's
look at another user's conversation is itself audited (``api.app.oversight``). The rows
are the conversation's latest ``SCAN_ROWS`` audit rows (its runs' tool calls, and reads
of it); the verification walks the tenant's whole hash chain, as ``agentbus audit verify``
does (``api.app.audit_reads``).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from api.app.audit_reads import Activity
from api.app.errors import ConversationNotFound
from api.http.responses import ADMIN, errors
from api.http.routes.common import Admin, AuditLog

router = APIRouter(prefix="/api/v1/activity", tags=["activity"])


@router.get("", response_model=Activity, responses=errors(*ADMIN, ConversationNotFound))
async def activity(
    audit: AuditLog,
    admin: Admin,
    conversation_id: Annotated[str, Query(min_length=1, max_length=64)],
) -> Activity:
    """Audit rows of the conversation's runs, and whether the tenant's chain verifies."""
    return await audit.activity(admin, conversation_id)
