"""Conversations as trees: messages.parent_id, conversations.active_message_id.

A message's parent is the message it follows (a question's: the answer before it, NULL at
the start; an answer's: its question). Existing conversations become one line: each
message's parent is the one appended before it, and the active branch ends at the last.
``conversation_turns.parent_message_id`` keeps the turn a queued question continues from.

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | Sequence[str] | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add the columns and make every existing conversation one line."""
    with op.batch_alter_table("messages") as batch:
        batch.add_column(sa.Column("parent_id", sa.Integer(), nullable=True))
    with op.batch_alter_table("conversations") as batch:
        batch.add_column(sa.Column("active_message_id", sa.Integer(), nullable=True))
    with op.batch_alter_table("conversation_turns") as batch:
        batch.add_column(sa.Column("parent_message_id", sa.Integer(), nullable=True))
    op.create_index("ix_messages_parent_id", "messages", ["parent_id"])
    # Row-level security (Postgres) lets a migration's owner role see every row only when
    # the all-tenants setting is on; it is transaction-local, as the store's.
    if op.get_context().dialect.name == "postgresql":
        op.execute("SELECT set_config('app.all_tenants', 'on', true)")
    op.execute(
        "UPDATE messages SET parent_id = (SELECT max(m.id) FROM messages m"
        " WHERE m.conversation_id = messages.conversation_id AND m.id < messages.id)"
    )
    op.execute(
        "UPDATE conversations SET active_message_id = (SELECT max(m.id) FROM messages m"
        " WHERE m.conversation_id = conversations.id)"
    )


def downgrade() -> None:
    """Drop the columns (a tree keeps only its messages, in the order they were appended)."""
    op.drop_index("ix_messages_parent_id", table_name="messages")
    with op.batch_alter_table("conversation_turns") as batch:
        batch.drop_column("parent_message_id")
    with op.batch_alter_table("conversations") as batch:
        batch.drop_column("active_message_id")
    with op.batch_alter_table("messages") as batch:
        batch.drop_column("parent_id")
