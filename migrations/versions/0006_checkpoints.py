"""Paused runs at durable gates (issue 8): checkpoints, tenant-isolated by RLS on Postgres.

Revision ID: 0006
Revises: 0005
Create Date: 2025-12-08
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# current_setting(..., true) is NULL when the setting was never made in the session, and ''
# after a transaction-local one ended: neither equals a tenant id, so no tenant, no rows.
_TENANT = "current_setting('app.tenant_id', true)"
_POLICY = "checkpoints_tenant_isolation"


def upgrade() -> None:
    """Create checkpoints and its indexes; on Postgres, turn on row-level security."""
    # Plain types, not the ORM's: a migration must keep meaning what it meant when written.
    op.create_table(
        "checkpoints",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("subject", sa.String(255), nullable=False),
        sa.Column("reason", sa.String(32), nullable=False),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("state", sa.JSON(), nullable=False),
        sa.Column("blocked_host", sa.String(255), nullable=True),
        sa.Column("tool", sa.String(255), nullable=True),
        sa.Column("args", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("resumed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("decision", sa.String(32), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_checkpoints")),
    )
    op.create_index("ix_checkpoints_run_id", "checkpoints", ["run_id"])
    # At most one open (not yet resumed) gate per run; both dialects support partial indexes.
    op.create_index(
        "uq_checkpoints_open_run_id",
        "checkpoints",
        ["run_id"],
        unique=True,
        sqlite_where=sa.text("resumed_at IS NULL"),
        postgresql_where=sa.text("resumed_at IS NULL"),
    )
    if op.get_context().dialect.name == "postgresql":
        op.execute("ALTER TABLE checkpoints ENABLE ROW LEVEL SECURITY")
        # FORCE: the table's owner (usually the app's own role) is bound by the policy too.
        op.execute("ALTER TABLE checkpoints FORCE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY {_POLICY} ON checkpoints"
            f" USING (tenant_id = {_TENANT}) WITH CHECK (tenant_id = {_TENANT})"
        )


def downgrade() -> None:
    """Drop the policy (Postgres), the indexes and checkpoints (paused runs go with it)."""
    if op.get_context().dialect.name == "postgresql":
        op.execute(f"DROP POLICY IF EXISTS {_POLICY} ON checkpoints")
    op.drop_index("uq_checkpoints_open_run_id", table_name="checkpoints")
    op.drop_index("ix_checkpoints_run_id", table_name="checkpoints")
    op.drop_table("checkpoints")
