"""Conversations, their messages, and what a finished run leaves behind.

Revision ID: 0002
Revises: 0001
Create Date: 2025-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create conversations and messages; add conversation_id, trace and usage to runs."""
    # Plain types, not the ORM's: a migration must keep meaning what it meant when written.
    op.create_table(
        "conversations",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("subject", sa.String(255), nullable=False),
        sa.Column("title", sa.String(120), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_conversations")),
    )
    op.create_index(
        "ix_conversations_tenant_id_updated_at", "conversations", ["tenant_id", "updated_at"]
    )
    op.create_table(
        "messages",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("conversation_id", sa.String(64), nullable=False),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("run_id", sa.String(64), nullable=True),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_messages_conversation_id_conversations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_messages")),
        sa.UniqueConstraint(
            "conversation_id",
            "run_id",
            "role",
            name=op.f("uq_messages_conversation_id_run_id_role"),
        ),
    )
    op.create_index("ix_messages_conversation_id_id", "messages", ["conversation_id", "id"])
    # Batch mode: SQLite rebuilds the table where it cannot ALTER it in place.
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("conversation_id", sa.String(64), nullable=True))
        # sa.JSON is json on Postgres and text on SQLite.
        batch.add_column(sa.Column("trace", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("usage", sa.JSON(), nullable=True))


def downgrade() -> None:
    """Drop the added runs columns, then messages, then conversations."""
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("usage")
        batch.drop_column("trace")
        batch.drop_column("conversation_id")
    op.drop_index("ix_messages_conversation_id_id", table_name="messages")
    op.drop_table("messages")
    op.drop_index("ix_conversations_tenant_id_updated_at", table_name="conversations")
    op.drop_table("conversations")
