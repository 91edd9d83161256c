"""Conversation turns: one run at a time per conversation, the others queued (multitask).

``conversation_locks`` (one row per conversation, locked by every admission and run end)
and ``conversation_turns`` (each run of a conversation: queued, running or ended, with what
publishes it); ``messages.status`` marks a partial answer ``interrupted``. On Postgres, both
tables get the owner policy of migration 0008.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | Sequence[str] | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TENANT = "current_setting('app.tenant_id', true)"
_SUBJECT = "current_setting('app.subject', true)"
_ALL_SUBJECTS = "current_setting('app.all_subjects', true) = 'on'"
_ALL_TENANTS = "current_setting('app.all_tenants', true) = 'on'"
_OWNED = f"{_ALL_TENANTS} OR (tenant_id = {_TENANT} AND ({_ALL_SUBJECTS} OR subject = {_SUBJECT}))"
_TABLES = ("conversation_locks", "conversation_turns")


def upgrade() -> None:
    """Create the two tables and messages.status; on Postgres, their policies."""
    op.create_table(
        "conversation_locks",
        sa.Column("conversation_id", sa.String(64), nullable=False),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("subject", sa.String(255), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("conversation_id", name="pk_conversation_locks"),
    )
    op.create_table(
        "conversation_turns",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("conversation_id", sa.String(64), nullable=False),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("subject", sa.String(255), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("publish", sa.Text(), nullable=False),
        sa.Column("timeout_s", sa.Float(), nullable=False),
        sa.Column("running_until", sa.Float(), nullable=True),
        sa.Column("disposition", sa.String(16), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_conversation_turns"),
        sa.UniqueConstraint("run_id", name="uq_conversation_turns_run_id"),
    )
    op.create_index(
        "ix_conversation_turns_conversation_id_state",
        "conversation_turns",
        ["conversation_id", "state"],
    )
    op.create_index(
        "ix_conversation_turns_state_running_until",
        "conversation_turns",
        ["state", "running_until"],
    )
    with op.batch_alter_table("messages") as batch:
        batch.add_column(sa.Column("status", sa.String(16), nullable=True))
    if op.get_context().dialect.name != "postgresql":
        return
    for table in _TABLES:
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        op.execute(f"CREATE POLICY {table}_scope ON {table} USING ({_OWNED}) WITH CHECK ({_OWNED})")


def downgrade() -> None:
    """Drop messages.status and the two tables (their policies go with them)."""
    with op.batch_alter_table("messages") as batch:
        batch.drop_column("status")
    op.drop_index("ix_conversation_turns_state_running_until", table_name="conversation_turns")
    op.drop_index("ix_conversation_turns_conversation_id_state", table_name="conversation_turns")
    op.drop_table("conversation_turns")
    op.drop_table("conversation_locks")
