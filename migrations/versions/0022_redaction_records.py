"""Redactions made before redaction records existed get one, so their chains verify.

From 0022 on, `agentbus audit verify` checks every redacted audit row against the
redaction record its erasure appended to the chain (`bus.store.audit_redaction`); rows an
erasure redacted before had none, and would read as forged. This migration appends, to
each tenant's chain, records that vouch for them as they stand at the upgrade (erasure
``migration 0022``, by ``migration``): one per batch (rows sharing a ``redacted_at``), at
most `MAX_ROWS_PER_RECORD` rows each.

It vouches only for what an erasure could have left: a row whose blanked columns do not
hold exactly the redaction marker gets no record, and `audit verify` names it. What it
cannot tell is a row rewritten before the upgrade into the marker itself: check the head
hashes you kept against `audit verify` before upgrading, as ever.

The downgrade leaves the records in place: they are links of the chain, and deleting
them would break it; the code before 0022 ignores them.

Revision ID: 0022
Revises: 0021
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from itertools import groupby
from typing import Any

import sqlalchemy as sa
from alembic import op

from bus.store.audit_chain import AuditLogRecord, canonical_json, hash_row
from bus.store.audit_redaction import (
    ERASURE_AGENT,
    MARKER,
    MAX_ROWS_PER_RECORD,
    REDACT_TOOL,
    RedactedRow,
    redaction_args,
)
from bus.store.tables import UTCDateTime

revision: str = "0022"
down_revision: str | Sequence[str] | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ERASURE = "migration 0022"
_BY = "migration"
_COLUMNS = (
    "id", "tenant_id", "seq", "subject", "run_id", "agent", "call_id", "tool",
    "tool_version", "args", "status", "code", "message", "blocked_host", "prev_hash",
    "row_hash",
)  # fmt: skip
_AUDIT = sa.table(
    "audit_log",
    *(sa.column(c) for c in _COLUMNS),
    sa.column("duration_ms", sa.Float()),
    sa.column("created_at", UTCDateTime()),
    sa.column("redacted_at", UTCDateTime()),
    sa.column("record_key", sa.String()),
)
_HEADS = sa.table("audit_heads", sa.column("tenant_id"), sa.column("seq"), sa.column("last_hash"))


def upgrade() -> None:
    """Append the redaction records each tenant's redacted rows lack."""
    conn = op.get_bind()
    if conn.dialect.name == "postgresql":  # every tenant's rows, past row-level security
        conn.execute(sa.text("SELECT set_config('app.all_tenants', 'on', true)"))
    redacted = _AUDIT.c.redacted_at.is_not(None)
    tenants = conn.execute(sa.select(_AUDIT.c.tenant_id).where(redacted).distinct()).scalars()
    for tenant in sorted(tenants):
        rows = conn.execute(
            sa.select(_AUDIT).where(_AUDIT.c.tenant_id == tenant, redacted).order_by(_AUDIT.c.seq)
        ).mappings()
        records = [AuditLogRecord.model_validate(dict(r)) for r in rows]
        _vouch(conn, tenant, [r for r in records if _holds_the_marker(r)])


def _holds_the_marker(record: AuditLogRecord) -> bool:
    return all(getattr(record, name) == blank for name, blank in MARKER.items())


def _vouch(conn: sa.Connection, tenant: str, records: list[AuditLogRecord]) -> None:
    """Append records vouching for ``records``, one per batch, to the tenant's chain."""
    head = conn.execute(
        sa.select(_HEADS.c.seq, _HEADS.c.last_hash)
        .where(_HEADS.c.tenant_id == tenant)
        .with_for_update()
    ).one_or_none()
    if head is None or not records:  # no head: the chain is broken already, verify says so
        return
    seq, prev = head.seq, head.last_hash
    for at, batch in groupby(records, key=lambda r: r.redacted_at):
        assert at is not None  # only redacted rows were read
        rows = [
            RedactedRow(seq=r.seq, row_hash=r.row_hash, redacted_hash=r.expected_hash())
            for r in batch
        ]
        for i in range(0, len(rows), MAX_ROWS_PER_RECORD):
            seq += 1
            values = _record(tenant, seq, prev, at, rows[i : i + MAX_ROWS_PER_RECORD])
            conn.execute(sa.insert(_AUDIT).values(**values))
            prev = values["row_hash"]
    conn.execute(
        sa.update(_HEADS).where(_HEADS.c.tenant_id == tenant).values(seq=seq, last_hash=prev)
    )


def _record(
    tenant: str, seq: int, prev: str, at: datetime, rows: list[RedactedRow]
) -> dict[str, Any]:
    values: dict[str, Any] = {
        "tenant_id": tenant,
        "seq": seq,
        "created_at": datetime.now(UTC),
        "subject": _BY,
        "run_id": "",
        "agent": ERASURE_AGENT,
        "call_id": _ERASURE,
        "tool": REDACT_TOOL,
        "tool_version": None,
        "args": canonical_json(redaction_args(_ERASURE, _BY, at, rows)),
        "status": "ok",
        "code": "audit_rows_redacted",
        "message": f"{len(rows)} audit row(s) redacted before redaction records existed "
        "were vouched for at the upgrade",
        "blocked_host": None,
        "duration_ms": 0.0,
        "prev_hash": prev,
    }
    values["row_hash"] = hash_row(values)
    return values


def downgrade() -> None:
    """Nothing: the records are links of the chain (see the module docstring)."""
