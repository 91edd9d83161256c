"""Retention and erasure: the audit chain's anchor, and audit rows redacted by erasure.

``audit_anchors`` holds, per tenant, the last audit row retention pruned (its seq and
hash): a chain is checked from there instead of from its first row. ``audit_log`` gets
``redacted_at`` (not hashed): set when erasing a user blanked the row's content, so the
check keeps the row's place in the chain and skips its content. On Postgres the anchors
get the tenant-only policy of migration 0008.

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | Sequence[str] | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TENANT = "current_setting('app.tenant_id', true)"
_ALL_TENANTS = "current_setting('app.all_tenants', true) = 'on'"
_TABLE = "audit_anchors"


def upgrade() -> None:
    """Create audit_anchors (and its policy on Postgres); add audit_log.redacted_at."""
    op.create_table(
        _TABLE,
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("last_hash", sa.String(64), nullable=False),
        sa.Column("pruned_rows", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", name=op.f("pk_audit_anchors")),
    )
    op.add_column("audit_log", sa.Column("redacted_at", sa.DateTime(timezone=True)))
    if op.get_context().dialect.name != "postgresql":
        return
    rule = f"{_ALL_TENANTS} OR tenant_id = {_TENANT}"
    op.execute(f"ALTER TABLE {_TABLE} ENABLE ROW LEVEL SECURITY")
    op.execute(f"ALTER TABLE {_TABLE} FORCE ROW LEVEL SECURITY")
    op.execute(f"CREATE POLICY {_TABLE}_scope ON {_TABLE} USING ({rule}) WITH CHECK ({rule})")


def downgrade() -> None:
    """Drop the column and the table (its policy goes with it).

    A chain that was pruned then no longer verifies from its first row: its first rows
    are gone, and only the anchor said where it now starts.
    """
    with op.batch_alter_table("audit_log") as batch:
        batch.drop_column("redacted_at")
    op.drop_table(_TABLE)
