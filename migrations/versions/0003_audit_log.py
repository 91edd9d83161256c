"""The gateway's append-only audit log: one hash chain per tenant, and each chain's head.

Revision ID: 0003
Revises: 0002
Create Date: 2025-12-05
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create audit_log and audit_heads."""
    # Plain types, not the ORM's: a migration must keep meaning what it meant when written.
    # INTEGER on SQLite: only that type aliases the rowid and autoincrements.
    big_id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
    op.create_table(
        "audit_log",
        sa.Column("id", big_id, autoincrement=True, nullable=False),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("subject", sa.String(255), nullable=False),
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("agent", sa.String(64), nullable=False),
        sa.Column("call_id", sa.String(255), nullable=False),
        sa.Column("tool", sa.String(255), nullable=False),
        sa.Column("tool_version", sa.String(64), nullable=True),
        sa.Column("args", sa.Text(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("code", sa.String(64), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("blocked_host", sa.String(255), nullable=True),
        sa.Column("duration_ms", sa.Float(), nullable=False),
        sa.Column("prev_hash", sa.String(64), nullable=False),
        sa.Column("row_hash", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_log")),
        sa.UniqueConstraint("tenant_id", "seq", name=op.f("uq_audit_log_tenant_id_seq")),
    )
    op.create_index("ix_audit_log_tenant_id_call_id", "audit_log", ["tenant_id", "call_id"])
    op.create_table(
        "audit_heads",
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("last_hash", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", name=op.f("pk_audit_heads")),
    )


def downgrade() -> None:
    """Drop audit_heads and audit_log (the audit trail goes with them)."""
    op.drop_table("audit_heads")
    op.drop_index("ix_audit_log_tenant_id_call_id", table_name="audit_log")
    op.drop_table("audit_log")
