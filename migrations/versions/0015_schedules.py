"""Scheduled questions: ``schedules`` (a question on a cron) and ``schedule_ticks``.

A tick is claimed by moving its schedule's ``next_run_at`` on (compare-and-set on
``version``) and inserting its tick row, in one transaction; the tick row's unique
(schedule, tick) and its run id derived from them keep a tick to one run across replicas.
On Postgres, both tables get the owner policy of migration 0008.

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | Sequence[str] | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TENANT = "current_setting('app.tenant_id', true)"
_SUBJECT = "current_setting('app.subject', true)"
_ALL_SUBJECTS = "current_setting('app.all_subjects', true) = 'on'"
_ALL_TENANTS = "current_setting('app.all_tenants', true) = 'on'"
_OWNED = f"{_ALL_TENANTS} OR (tenant_id = {_TENANT} AND ({_ALL_SUBJECTS} OR subject = {_SUBJECT}))"
_TABLES = ("schedules", "schedule_ticks")


def upgrade() -> None:
    """Create the two tables; on Postgres, their policies."""
    op.create_table(
        "schedules",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("subject", sa.String(255), nullable=False),
        sa.Column("key_id", sa.String(64), nullable=True),
        sa.Column("groups", sa.JSON(), nullable=False),
        sa.Column("cron", sa.String(120), nullable=False),
        sa.Column("timezone", sa.String(64), nullable=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.Column("webhook_url", sa.Text(), nullable=True),
        sa.Column("missed", sa.String(16), nullable=False),
        sa.Column("conversation_id", sa.String(64), nullable=False),
        sa.Column("paused", sa.Boolean(), nullable=False),
        sa.Column("next_run_at", sa.BigInteger(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_schedules"),
    )
    op.create_index("ix_schedules_paused_next_run_at", "schedules", ["paused", "next_run_at"])
    op.create_index("ix_schedules_tenant_id_subject", "schedules", ["tenant_id", "subject"])
    op.create_table(
        "schedule_ticks",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("schedule_id", sa.String(64), nullable=False),
        sa.Column("tick_at", sa.BigInteger(), nullable=False),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("subject", sa.String(255), nullable=False),
        sa.Column("run_id", sa.String(64), nullable=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("error", sa.String(64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_schedule_ticks"),
        sa.UniqueConstraint("run_id", name="uq_schedule_ticks_run_id"),
        sa.UniqueConstraint("schedule_id", "tick_at", name="uq_schedule_ticks_schedule_id_tick_at"),
    )
    op.create_index("ix_schedule_ticks_state_created_at", "schedule_ticks", ["state", "created_at"])
    if op.get_context().dialect.name != "postgresql":
        return
    for table in _TABLES:
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        op.execute(f"CREATE POLICY {table}_scope ON {table} USING ({_OWNED}) WITH CHECK ({_OWNED})")


def downgrade() -> None:
    """Drop the two tables (their policies go with them)."""
    op.drop_index("ix_schedule_ticks_state_created_at", table_name="schedule_ticks")
    op.drop_table("schedule_ticks")
    op.drop_index("ix_schedules_tenant_id_subject", table_name="schedules")
    op.drop_index("ix_schedules_paused_next_run_at", table_name="schedules")
    op.drop_table("schedules")
