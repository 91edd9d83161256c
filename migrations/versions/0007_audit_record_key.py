"""Audit rows written from the ledger carry the key of the record they came from.

The gateway no longer writes its audit rows itself: they travel in its step's commit, on
the shard's ledger stream, and a recorder appends them in batches. A recorder that crashes
after its transaction but before its ack gets the same records again; the unique
(tenant_id, record_key) index lets it skip what it already wrote.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add audit_log.record_key (NULL for rows written directly) and its unique index."""
    op.add_column("audit_log", sa.Column("record_key", sa.String(200), nullable=True))
    op.create_index(
        "uq_audit_log_tenant_id_record_key",
        "audit_log",
        ["tenant_id", "record_key"],
        unique=True,
    )


def downgrade() -> None:
    """Drop the index and the column."""
    op.drop_index("uq_audit_log_tenant_id_record_key", table_name="audit_log")
    with op.batch_alter_table("audit_log") as batch:
        batch.drop_column("record_key")
