"""Reading the audit log through the API: a page of rows (``GET /api/v1/audit``) and one
conversation's rows with the chain's verification (``GET /api/v1/activity``, the web page's
Activity panel), and the operator's walk and reading of any tenant's log (``agentbus audit``).

A user reads the rows of their own runs and actions; an admin the tenant's. Arguments were
redacted before they were stored and are redacted again on the way out. An admin's look at
another user's conversation is itself audited (`api.app.oversight`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from api.app.auth import Principal
from api.app.errors import ConversationNotFound, Unavailable
from api.app.oversight import audit_read
from bus.store import AuditLogRecord, AuditStore, ChainReport, ConversationStore, Scope
from gateway.redact import redact

#: How far back the tenant's log is read for one conversation's rows.
SCAN_ROWS = 2_000
_PAGE = 500


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
    def of(cls, row: AuditLogRecord) -> AuditRowView:
        """The view of a stored row, its arguments redacted (again)."""
        fields = row.model_dump(exclude={"id", "tenant_id", "args"})
        return cls(**fields, args=redact(row.args_value()))


class AuditPage(BaseModel):
    """One page of rows, newest first; ``next_before`` is None on the last page."""

    rows: list[AuditRowView]
    next_before: int | None


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


class AuditReads:
    """The audit log as the API reads it.

    Args:
        audit: the audit log (None: this deployment has none; every read is unavailable).
        conversations: the conversations (whose rows the Activity panel shows).
    """

    def __init__(self, audit: AuditStore | None, conversations: ConversationStore) -> None:
        self._audit = audit
        self._conversations = conversations

    async def page(
        self,
        who: Principal,
        limit: int,
        before: int | None,
        *,
        run_id: str | None = None,
        conversation_id: str | None = None,
    ) -> AuditPage:
        """The caller's rows (an admin's: the tenant's), newest first."""
        if self._audit is None:
            raise Unavailable("this deployment has no audit log")
        rows = await self._audit.list(
            who.scope, limit, before, run_id=run_id, conversation_id=conversation_id
        )
        views = [AuditRowView.of(row) for row in rows]
        return AuditPage(rows=views, next_before=views[-1].seq if len(views) == limit else None)

    async def activity(self, admin: Principal, conversation_id: str) -> Activity:
        """The conversation's latest ``SCAN_ROWS`` rows, and whether the tenant's chain
        verifies (its whole hash chain, as ``agentbus audit verify`` walks it)."""
        audit = self._audit
        if audit is None:
            raise Unavailable("the audit log needs a state store")
        found = await self._conversations.get(admin.scope, conversation_id)
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


@dataclass(frozen=True, slots=True)
class AuditCheck:
    """What a walk of the audit log's chains found, as an operator reads it.

    Attributes:
        ok: every chain holds.
        empty: there was no chain to walk.
        lines: each chain's state, and where a broken one breaks (with its first bad row).
        document: the whole report as indented JSON.
    """

    ok: bool
    empty: bool
    lines: list[str]
    document: str


class OperatorAudit:
    """Any tenant's audit log, as the operator checks and reads it on the command line
    (the database's credentials are the permission)."""

    def __init__(self, audit: AuditStore) -> None:
        self._audit = audit

    async def verify(self, tenant_id: str | None) -> AuditCheck:
        """Check every row's hash and link, of every chain or of one tenant's."""
        report = await self._audit.verify(tenant_id)
        lines = [line for chain in report.chains for line in describe_chain(chain)]
        document = report.model_dump_json(indent=2)
        return AuditCheck(report.ok, not report.chains, lines, document)

    async def rows(
        self,
        tenant_id: str,
        subject: str | None,
        limit: int,
        before: int | None,
        *,
        run_id: str | None = None,
        conversation_id: str | None = None,
    ) -> list[AuditRowView]:
        """A tenant's rows (one user's when ``subject`` is given), newest first."""
        scope = Scope.user(tenant_id, subject) if subject else Scope.tenant(tenant_id)
        rows = await self._audit.list(
            scope, limit, before, run_id=run_id, conversation_id=conversation_id
        )
        return [AuditRowView.of(row) for row in rows]


def describe_chain(chain: ChainReport) -> list[str]:
    """A chain's state in a line, and, when it is broken, where and its first bad row."""
    if chain.broken is None:
        line = f"{chain.tenant_id}: ok, {chain.rows} rows, head {chain.head_hash}"
        if chain.anchor_seq is not None:
            line += f"; checked from the anchor at seq {chain.anchor_seq} ({chain.anchor_hash})"
        if chain.redacted:
            line += (
                f"; {chain.redacted} rows redacted by erasure (each checked against its "
                "redaction record)"
            )
        return [line]
    broken = chain.broken
    where = f"row id {broken.row_id} (seq {broken.seq})" if broken.row_id else f"seq {broken.seq}"
    since = "" if chain.anchor_seq is None else f" (from the anchor at seq {chain.anchor_seq})"
    lines = [
        f"{chain.tenant_id}: BROKEN at {where} after {chain.rows} good rows{since}: {broken.reason}"
    ]
    if broken.record is not None:
        r = broken.record
        lines.append(
            f"    {r.created_at.isoformat()} run={r.run_id} agent={r.agent} tool={r.tool} "
            f"call={r.call_id} status={r.status} code={r.code}"
        )
    return lines
