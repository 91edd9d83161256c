"""The table of paused runs: one checkpoint per gate a run stopped at (issue 8).

Kept apart from ``bus.store.tables`` (same ``Base``, same metadata) so it can change without
touching the other tables; ``bus.store`` imports it, so alembic and the ORM always see it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Index, Integer, String, text
from sqlalchemy.orm import Mapped, mapped_column

from bus.store.tables import Base, UTCDateTime

# The predicate of the "one open gate per run" index, spelled the same for both dialects
# (and in migration 0006) so the schema and the models compare equal.
OPEN_GATE = "resumed_at IS NULL"


class CheckpointRow(Base):
    """A run paused at a gate: what it needs to continue, and how the gate was decided.

    On Postgres, row-level security (migration 0008) hides every row outside the
    transaction's scope (``bus.store.scope``): another tenant's, or another user's unless
    the scope covers every user of the tenant.
    """

    __tablename__ = "checkpoints"
    __table_args__ = (
        Index("ix_checkpoints_run_id", "run_id"),
        # At most one open gate per run: a second suspend while one waits is a bug, and a
        # partial unique index refuses it on both backends, races included.
        Index(
            "uq_checkpoints_open_run_id",
            "run_id",
            unique=True,
            sqlite_where=text(OPEN_GATE),
            postgresql_where=text(OPEN_GATE),
        ),
    )

    # The gate id (a uuid hex): also what an approval_request names.
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    run_id: Mapped[str] = mapped_column(String(64))
    tenant_id: Mapped[str] = mapped_column(String(64))
    subject: Mapped[str] = mapped_column(String(255))
    # A plain string for the same reason as ``RunRow.status``; ``GateReason`` validates it.
    reason: Mapped[str] = mapped_column(String(32))
    step: Mapped[int] = mapped_column(Integer)
    state: Mapped[dict[str, Any]] = mapped_column(JSON())
    # The run state's version (migration 0017); NULL: written by 0.2.0, version 2.
    state_version: Mapped[int | None] = mapped_column(Integer)
    blocked_host: Mapped[str | None] = mapped_column(String(255))
    tool: Mapped[str | None] = mapped_column(String(255))
    # Redacted by the caller before it gets here. none_as_null: None is SQL NULL, not 'null'.
    args: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    resumed_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    decision: Mapped[str | None] = mapped_column(String(32))
