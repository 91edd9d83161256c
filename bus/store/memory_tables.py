"""The table of long-term memories: what each user said about themselves, one row per topic.

Kept apart from ``bus.store.tables`` (same ``Base``, same metadata), as the schedule tables
are; ``bus.store`` imports it, so alembic and the ORM always see it. Read
``bus.store.memories`` for what the rows mean.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from bus.store.tables import Base, UTCDateTime


class MemoryRow(Base):
    """One thing a user said about themselves or their preferences, on one topic."""

    __tablename__ = "memories"
    __table_args__ = (
        # A newer statement on a topic replaces the older one: one row per user and topic.
        UniqueConstraint("tenant_id", "subject", "topic", name="uq_memories_owner_topic"),
        Index("ix_memories_tenant_id_subject_updated_at", "tenant_id", "subject", "updated_at"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(64))
    subject: Mapped[str] = mapped_column(String(255))
    topic: Mapped[str] = mapped_column(String(64))
    text: Mapped[str] = mapped_column(Text)
    # Provenance: the run and the user's message it was said in.
    run_id: Mapped[str | None] = mapped_column(String(64))
    conversation_id: Mapped[str | None] = mapped_column(String(64))
    message_id: Mapped[int | None] = mapped_column(Integer)
    # The ledger record that wrote it (a redelivered record finds its key and writes nothing).
    record_key: Mapped[str | None] = mapped_column(String(200))
    # When the user said it: an older statement never replaces a newer one.
    said_at: Mapped[datetime] = mapped_column(UTCDateTime())
    edited: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
