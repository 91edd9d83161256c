"""``GET /api/v1/activity``: a conversation's audit rows and the audit chain's verification.

The web page's Activity panel. Admin keys only (the chain is the tenant's); an admin's
look at another user's conversation is itself audited (``api.app.oversight``). The rows
are the conversation's latest ``SCAN_ROWS`` audit rows (its runs' tool calls, and reads
of it); the verification walks the tenant's whole hash chain, as ``agentbus audit verify``
does.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel

from api.app.errors import ConversationNotFound, Unavailable
from api.app.oversight import audit_read
from api.http.responses import ADMIN, errors
from api.http.routes.common import Admin, Audit, Conversations
from bus.store import ChainReport

router = APIRouter(prefix="/api/v1/activity", tags=["activity"])

#: How far back the tenant's log is read for one conversation's rows.
SCAN_ROWS = 2_000
_PAGE = 500


class ActivityRow(BaseModel):
    """One audited tool call (arguments redacted at write time)."""

    seq: int
    created_at: str
    run_id: str
    agent: str
    tool: str
    args: Any
    status: str
    code: str
    message: str
    blocked_host: str | None
    duration_ms: float


class Activity(BaseModel):
    """The rows of one conversation's runs, newest first, and the chain's state."""

    conversation_id: str
    rows: list[ActivityRow]
    chain_ok: bool
    chain: ChainReport | None


@router.get("", response_model=Activity, responses=errors(*ADMIN, ConversationNotFound))
async def activity(
    audit: Audit,
    conversations: Conversations,
    admin: Admin,
    conversation_id: Annotated[str, Query(min_length=1, max_length=64)],
) -> Activity:
    """Audit rows of the conversation's runs, and whether the tenant's chain verifies."""
    if audit is None:
        raise Unavailable("the audit log needs a state store")
    found = await conversations.get(admin.scope, conversation_id)
    if found is None:
        raise ConversationNotFound(f"no conversation {conversation_id[:80]!r}")
    await audit_read(
        audit, admin, what="read_activity", owners=[found.subject], target=conversation_id
    )
    rows: list[ActivityRow] = []
    before: int | None = None
    for _ in range(SCAN_ROWS // _PAGE):
        page = await audit.list(
            admin.scope, limit=_PAGE, before_seq=before, conversation_id=conversation_id
        )
        rows.extend(
            ActivityRow(
                seq=r.seq,
                created_at=r.created_at.isoformat(),
                run_id=r.run_id,
                agent=r.agent,
                tool=r.tool,
                args=json.loads(r.args) if r.args else None,
                status=r.status,
                code=r.code,
                message=r.message,
                blocked_host=r.blocked_host,
                duration_ms=r.duration_ms,
            )
            for r in page
        )
        if len(page) < _PAGE:
            break
        before = page[-1].seq
    report = await audit.verify(admin.tenant_id)
    chain = report.chains[0] if report.chains else None
    return Activity(conversation_id=conversation_id, rows=rows, chain_ok=report.ok, chain=chain)
