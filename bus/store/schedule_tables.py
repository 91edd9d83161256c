"""The tables of scheduled questions: each schedule, and each of its ticks that was claimed.

Kept apart from ``bus.store.tables`` (same ``Base``, same metadata), as the turn tables
are; ``bus.store`` imports it, so alembic and the ORM always see it. Read
``bus.store.schedules`` for what the rows mean.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from bus.store.tables import Base, UTCDateTime


class ScheduleRow(Base):
    """A question asked on a cron schedule, as the user who created it, in one conversation."""

    __tablename__ = "schedules"
    __table_args__ = (
        Index("ix_schedules_paused_next_run_at", "paused", "next_run_at"),
        Index("ix_schedules_tenant_id_subject", "tenant_id", "subject"),
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(64))
    subject: Mapped[str] = mapped_column(String(255))
    # The API key the schedule acts with (its runs carry the key's groups; revoking it stops
    # the runs); NULL for a schedule made by `agentbus schedules add`, which acts with
    # ``groups``.
    key_id: Mapped[str | None] = mapped_column(String(64))
    groups: Mapped[list[str]] = mapped_column(JSON(), default=list)
    cron: Mapped[str] = mapped_column(String(120))
    timezone: Mapped[str] = mapped_column(String(64))
    question: Mapped[str] = mapped_column(Text)
    # The question's own settings (``bus.run_state.QuestionSettings``, as JSON).
    settings: Mapped[dict[str, Any]] = mapped_column(JSON())
    webhook_url: Mapped[str | None] = mapped_column(Text)
    # What a tick missed while nothing ran does: ``skip`` or ``run_once``.
    missed: Mapped[str] = mapped_column(String(16))
    conversation_id: Mapped[str] = mapped_column(String(64))
    paused: Mapped[bool] = mapped_column(Boolean, default=False)
    # The next tick (Unix seconds); claiming a tick moves it on, compare-and-set on version.
    next_run_at: Mapped[int] = mapped_column(BigInteger)
    version: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())


class ScheduleTickRow(Base):
    """One tick of a schedule that was claimed: the run it started, or why it did not."""

    __tablename__ = "schedule_ticks"
    __table_args__ = (
        UniqueConstraint("schedule_id", "tick_at", name="uq_schedule_ticks_schedule_id_tick_at"),
        Index("ix_schedule_ticks_state_created_at", "state", "created_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    schedule_id: Mapped[str] = mapped_column(String(64))
    tick_at: Mapped[int] = mapped_column(BigInteger)
    tenant_id: Mapped[str] = mapped_column(String(64))
    subject: Mapped[str] = mapped_column(String(255))
    # Derived from (schedule, tick): publishing it twice is a no-op. NULL for a skipped tick.
    run_id: Mapped[str | None] = mapped_column(String(64), unique=True)
    # claimed (its run is being published), started, skipped or refused.
    state: Mapped[str] = mapped_column(String(16))
    error: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
