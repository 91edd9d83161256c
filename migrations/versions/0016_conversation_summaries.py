"""Conversation summaries: a branch's older turns folded into text, one row per path.

``conversation_summaries`` holds, per (conversation, message), the summary of the path from
the conversation's start through that message; deleting the conversation deletes them. On
Postgres the table gets the owner policy of migration 0008.

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | Sequence[str] | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TENANT = "current_setting('app.tenant_id', true)"
_SUBJECT = "current_setting('app.subject', true)"
_ALL_SUBJECTS = "current_setting('app.all_subjects', true) = 'on'"
_ALL_TENANTS = "current_setting('app.all_tenants', true) = 'on'"
_OWNED = f"{_ALL_TENANTS} OR (tenant_id = {_TENANT} AND ({_ALL_SUBJECTS} OR subject = {_SUBJECT}))"
_TABLE = "conversation_summaries"


def upgrade() -> None:
    """Create the table; on Postgres, its policy."""
    op.create_table(
        _TABLE,
        sa.Column("conversation_id", sa.String(64), nullable=False),
        sa.Column("through_message_id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("subject", sa.String(255), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("messages", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.String(64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name="fk_conversation_summaries_conversation_id_conversations",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "conversation_id", "through_message_id", name="pk_conversation_summaries"
        ),
    )
    if op.get_context().dialect.name != "postgresql":
        return
    op.execute(f"ALTER TABLE {_TABLE} ENABLE ROW LEVEL SECURITY")
    op.execute(f"ALTER TABLE {_TABLE} FORCE ROW LEVEL SECURITY")
    op.execute(f"CREATE POLICY {_TABLE}_scope ON {_TABLE} USING ({_OWNED}) WITH CHECK ({_OWNED})")


def downgrade() -> None:
    """Drop the table (its policy goes with it)."""
    op.drop_table(_TABLE)
