"""The table of conversation summaries: older turns folded into text a model reads instead.

Kept apart from ``bus.store.tables`` (same ``Base``, same metadata), as the gate and turn
tables are; ``bus.store`` imports it, so alembic and the ORM always see it. Read
``bus.store.summaries`` for what the rows mean.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from bus.store.tables import Base, UTCDateTime


class SummaryRow(Base):
    """A summary of a conversation's path from its start through one message.

    A conversation is a tree, so the path to a message is the same on every branch that
    goes through it: one row per (conversation, message) serves them all, and the primary
    key makes the first write the only one.
    """

    __tablename__ = "conversation_summaries"

    conversation_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("conversations.id", ondelete="CASCADE"), primary_key=True
    )
    through_message_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # Copied from the conversation so every read is scoped (and, on Postgres, policed).
    tenant_id: Mapped[str] = mapped_column(String(64))
    subject: Mapped[str] = mapped_column(String(255))
    content: Mapped[str] = mapped_column(Text)
    # How many messages of the path it covers (the path from the start through the message).
    messages: Mapped[int] = mapped_column(Integer)
    # The run whose intake wrote it.
    run_id: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
