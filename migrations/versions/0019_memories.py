"""Long-term memories: what each user said about themselves, one row per topic.

On Postgres the table gets the owner policy of migration 0008.

Revision ID: 0019
Revises: 0018
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | Sequence[str] | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TENANT = "current_setting('app.tenant_id', true)"
_SUBJECT = "current_setting('app.subject', true)"
_ALL_SUBJECTS = "current_setting('app.all_subjects', true) = 'on'"
_ALL_TENANTS = "current_setting('app.all_tenants', true) = 'on'"
_OWNED = f"{_ALL_TENANTS} OR (tenant_id = {_TENANT} AND ({_ALL_SUBJECTS} OR subject = {_SUBJECT}))"
_TABLE = "memories"


def upgrade() -> None:
    """Create the table; on Postgres, its policy."""
    op.create_table(
        _TABLE,
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("subject", sa.String(255), nullable=False),
        sa.Column("topic", sa.String(64), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("run_id", sa.String(64), nullable=True),
        sa.Column("conversation_id", sa.String(64), nullable=True),
        sa.Column("message_id", sa.Integer(), nullable=True),
        sa.Column("record_key", sa.String(200), nullable=True),
        sa.Column("said_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("edited", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_memories"),
        sa.UniqueConstraint("tenant_id", "subject", "topic", name="uq_memories_owner_topic"),
    )
    op.create_index(
        "ix_memories_tenant_id_subject_updated_at",
        _TABLE,
        ["tenant_id", "subject", "updated_at"],
    )
    if op.get_context().dialect.name != "postgresql":
        return
    op.execute(f"ALTER TABLE {_TABLE} ENABLE ROW LEVEL SECURITY")
    op.execute(f"ALTER TABLE {_TABLE} FORCE ROW LEVEL SECURITY")
    op.execute(f"CREATE POLICY {_TABLE}_scope ON {_TABLE} USING ({_OWNED}) WITH CHECK ({_OWNED})")


def downgrade() -> None:
    """Drop the table (its policy and index go with it)."""
    op.drop_table(_TABLE)
