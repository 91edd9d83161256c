"""The tables of conversation turns: who runs now in a conversation, and who waits.

Kept apart from ``bus.store.tables`` (same ``Base``, same metadata), as the gate tables are;
``bus.store`` imports it, so alembic and the ORM always see it. Read ``bus.store.turns``
for what the rows mean.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Float, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from bus.store.tables import Base, UTCDateTime


class ConversationLockRow(Base):
    """One row per conversation that ever had a turn: admissions and run ends lock it.

    Locking it (an UPDATE of ``version``) serialises every decision about the
    conversation's turns across processes: a row lock on Postgres, the write lock on SQLite.
    """

    __tablename__ = "conversation_locks"

    conversation_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(64))
    subject: Mapped[str] = mapped_column(String(255))
    version: Mapped[int] = mapped_column(Integer, default=0)


class TurnRow(Base):
    """One run of a conversation: queued, running or ended, in the order it was asked."""

    __tablename__ = "conversation_turns"
    __table_args__ = (
        Index("ix_conversation_turns_conversation_id_state", "conversation_id", "state"),
        Index("ix_conversation_turns_state_running_until", "state", "running_until"),
    )

    # The order questions were asked in (FIFO): autoincrement on both databases.
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(String(64), unique=True)
    conversation_id: Mapped[str] = mapped_column(String(64))
    tenant_id: Mapped[str] = mapped_column(String(64))
    subject: Mapped[str] = mapped_column(String(255))
    # A plain string for the same reason as ``RunRow.status``; ``TurnState`` validates it.
    state: Mapped[str] = mapped_column(String(16))
    question: Mapped[str] = mapped_column(Text)
    # How to publish the run (the starter's publish script's keys and arguments, JSON).
    publish: Mapped[str] = mapped_column(Text)
    timeout_s: Mapped[float] = mapped_column(Float)
    # While running: the run's deadline (epoch seconds); past it the turn is stale.
    running_until: Mapped[float | None] = mapped_column(Float)
    # What the run's end does to the history: NULL (keep), interrupt or rollback.
    disposition: Mapped[str | None] = mapped_column(String(16))
    # The message the question continues from (0: the conversation's start; NULL: the end
    # of the active branch when it starts).
    parent_message_id: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
