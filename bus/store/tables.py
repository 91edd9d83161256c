"""SQLAlchemy tables of the state store (the ORM never leaves ``bus.store``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    DateTime,
    Dialect,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

# Named constraints let later batch migrations on SQLite (which rebuild the table) find and
# alter constraints by name; unnamed ones are anonymous there.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC timestamp on every backend.

    SQLite has no timestamp type and drops the offset, so values are normalised to UTC
    before they are stored and marked UTC when they are read; naive values are refused
    because their zone cannot be known.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Normalise to UTC; store naive UTC on SQLite so text order is time order."""
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"naive datetime {value!r}: pass a timezone-aware datetime")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Return an aware UTC datetime whatever the backend handed back."""
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


class Base(DeclarativeBase):
    """Declarative base; its metadata is what alembic compares against."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class RunRow(Base):
    """One question a tenant asked, and how it ended."""

    __tablename__ = "runs"
    __table_args__ = (Index("ix_runs_tenant_id_created_at", "tenant_id", "created_at"),)

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(64))
    subject: Mapped[str] = mapped_column(String(255))
    # A plain string, not a database enum: adding a status then needs no table rebuild on
    # SQLite or ALTER TYPE on Postgres; ``RunStatus`` validates values in Python.
    status: Mapped[str] = mapped_column(String(16))
    mode: Mapped[str] = mapped_column(String(32))
    question: Mapped[str] = mapped_column(Text)
    answer: Mapped[str | None] = mapped_column(Text)
    error_code: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    conversation_id: Mapped[str | None] = mapped_column(String(64))
    # JSON on Postgres, text on SQLite. none_as_null: a Python None is SQL NULL, not 'null'.
    trace: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON(none_as_null=True))
    usage: Mapped[dict[str, int] | None] = mapped_column(JSON(none_as_null=True))


class ConversationRow(Base):
    """A thread of questions and answers; each run of it adds a user and an assistant message."""

    __tablename__ = "conversations"
    __table_args__ = (Index("ix_conversations_tenant_id_updated_at", "tenant_id", "updated_at"),)

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(64))
    subject: Mapped[str] = mapped_column(String(255))
    title: Mapped[str | None] = mapped_column(String(120))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())


class MessageRow(Base):
    """One message of a conversation, in the order it was appended."""

    __tablename__ = "messages"
    __table_args__ = (
        # A run adds at most one message per role: a redelivered finalizer appends nothing.
        # (A message without a run is never deduplicated: NULLs are distinct in both databases.)
        UniqueConstraint("conversation_id", "run_id", "role"),
        Index("ix_messages_conversation_id_id", "conversation_id", "id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    conversation_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("conversations.id", ondelete="CASCADE")
    )
    # Copied from the conversation so every read can be scoped to the tenant on this table.
    tenant_id: Mapped[str] = mapped_column(String(64))
    run_id: Mapped[str | None] = mapped_column(String(64))
    # A plain string for the same reason as ``RunRow.status``; ``MessageRole`` validates it.
    role: Mapped[str] = mapped_column(String(16))
    content: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
