"""SQLAlchemy tables of the state store (the ORM never leaves ``bus.store``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Dialect,
    Float,
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
    __table_args__ = (
        Index("ix_runs_tenant_id_created_at", "tenant_id", "created_at"),
        # A user's own runs, newest first (GET /api/v1/runs for a user key).
        Index("ix_runs_tenant_id_subject_created_at", "tenant_id", "subject", "created_at"),
    )

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
    # What the run's judges concluded: true, false, or NULL (unknown or not judged).
    verified: Mapped[bool | None] = mapped_column(Boolean())
    verified_reason: Mapped[str | None] = mapped_column(Text)


class ConversationRow(Base):
    """A thread of questions and answers; each run of it adds a user and an assistant message."""

    __tablename__ = "conversations"
    __table_args__ = (
        Index("ix_conversations_tenant_id_updated_at", "tenant_id", "updated_at"),
        Index(
            "ix_conversations_tenant_id_subject_updated_at", "tenant_id", "subject", "updated_at"
        ),
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(64))
    subject: Mapped[str] = mapped_column(String(255))
    title: Mapped[str | None] = mapped_column(String(120))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    # The last message of the active branch: what the next question continues from.
    active_message_id: Mapped[int | None] = mapped_column(Integer)


class MessageRow(Base):
    """One message of a conversation, in the order it was appended."""

    __tablename__ = "messages"
    __table_args__ = (
        # A run adds at most one message per role: a redelivered finalizer appends nothing.
        # (A message without a run is never deduplicated: NULLs are distinct in both databases.)
        UniqueConstraint("conversation_id", "run_id", "role"),
        Index("ix_messages_conversation_id_id", "conversation_id", "id"),
        Index("ix_messages_parent_id", "parent_id"),
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
    # NULL for a whole message; ``interrupted`` for the partial answer of a run a newer
    # question cut short (``multitask: interrupt``).
    status: Mapped[str | None] = mapped_column(String(16))
    # The message this one follows (a question: the answer before it, NULL at the start;
    # an answer: its question); a conversation is a tree of them.
    parent_id: Mapped[int | None] = mapped_column(Integer)


# Postgres gets 64-bit ids (an audit log outlives 2^31 calls); SQLite keeps INTEGER, the only
# type that aliases its rowid and so autoincrements.
_BIG_ID = BigInteger().with_variant(Integer(), "sqlite")


class AuditRow(Base):
    """One tool call the gateway ran: who, what, how it ended; a link of its tenant's chain.

    ``row_hash`` covers every other column, ``prev_hash`` included, so editing or deleting
    a row breaks the chain (see ``bus.store.audit``). Retention deletes rows only from the
    start of a chain, moving its anchor (`AuditAnchorRow`); erasing a user blanks the
    content of their rows, sets ``redacted_at`` and appends a redaction record that vouches
    for them (`bus.store.erasure`). Nothing else updates or deletes a row.
    """

    __tablename__ = "audit_log"
    __table_args__ = (
        UniqueConstraint("tenant_id", "seq"),
        # Finds a side-effecting call's row on redelivery, so it is written once.
        Index("ix_audit_log_tenant_id_call_id", "tenant_id", "call_id"),
        # GET /api/v1/audit?run_id=...
        Index("ix_audit_log_tenant_id_run_id", "tenant_id", "run_id"),
        # A ledger record written twice (a recorder crashed before its ack) is kept once.
        Index("uq_audit_log_tenant_id_record_key", "tenant_id", "record_key", unique=True),
    )

    id: Mapped[int] = mapped_column(_BIG_ID, primary_key=True, autoincrement=True)
    tenant_id: Mapped[str] = mapped_column(String(64))
    # Position in the tenant's chain: 1, 2, 3... without gaps.
    seq: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    subject: Mapped[str] = mapped_column(String(255))
    run_id: Mapped[str] = mapped_column(String(64))
    agent: Mapped[str] = mapped_column(String(64))
    call_id: Mapped[str] = mapped_column(String(255))
    tool: Mapped[str] = mapped_column(String(255))
    tool_version: Mapped[str | None] = mapped_column(String(64))
    # Canonical JSON text, not a JSON column: the hash is taken over exactly these bytes,
    # and a JSON type may re-encode them (key order, spacing, number spelling).
    args: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16))
    code: Mapped[str] = mapped_column(String(64))
    message: Mapped[str] = mapped_column(Text)
    blocked_host: Mapped[str | None] = mapped_column(String(255))
    duration_ms: Mapped[float] = mapped_column(Float)
    prev_hash: Mapped[str] = mapped_column(String(64))
    row_hash: Mapped[str] = mapped_column(String(64))
    # The ledger record the row came from (not hashed: delivery bookkeeping, not content).
    record_key: Mapped[str | None] = mapped_column(String(200))
    # When erasing the row's user blanked its content (not hashed): the chain check then
    # keeps the row's place (seq, prev_hash, row_hash) and checks its content against the
    # redaction record the erasure appended (`bus.store.audit_redaction`).
    redacted_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class AuditHeadRow(Base):
    """The end of one tenant's audit chain: appends lock this row, so they form one line.

    It also records the last row, so deleting rows from the end is detected too.
    """

    __tablename__ = "audit_heads"

    tenant_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    seq: Mapped[int] = mapped_column(BigInteger)
    last_hash: Mapped[str] = mapped_column(String(64))


class AuditAnchorRow(Base):
    """Where a tenant's chain now starts: the last row retention pruned (its seq and hash).

    The first row left must follow it, as it followed the pruned row; a chain never
    pruned has no anchor and starts at seq 1 from ``GENESIS``.
    """

    __tablename__ = "audit_anchors"

    tenant_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    seq: Mapped[int] = mapped_column(BigInteger)
    last_hash: Mapped[str] = mapped_column(String(64))
    # Rows pruned so far, over every pass (what an operator reconciles against backups).
    pruned_rows: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())


class ApiKeyRow(Base):
    """An API key: only its digest is stored; the key itself is shown once, at creation."""

    __tablename__ = "api_keys"
    __table_args__ = (Index("ix_api_keys_tenant_id", "tenant_id"),)

    # The public part of the key (it is in the key's text), used to find the row.
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    # SHA-256 hex of the whole key; a high-entropy key needs no slow hash.
    key_hash: Mapped[str] = mapped_column(String(64))
    tenant_id: Mapped[str] = mapped_column(String(64))
    subject: Mapped[str] = mapped_column(String(255))
    # A plain string for the same reason as ``RunRow.status``; ``KeyRole`` validates it.
    role: Mapped[str] = mapped_column(String(16))
    name: Mapped[str | None] = mapped_column(String(120))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # The holder's ACL groups (a JSON list of names): every run started with the key
    # carries them, and retrieval reads only documents whose ACL names one of them.
    groups: Mapped[list[str]] = mapped_column(JSON(), default=list)


class TenantSettingsRow(Base):
    """A tenant's preferences, overlaying the deployment defaults (one JSON document)."""

    __tablename__ = "tenant_settings"

    tenant_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    settings: Mapped[dict[str, Any]] = mapped_column(JSON())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_by: Mapped[str] = mapped_column(String(255))
