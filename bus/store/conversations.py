"""The conversations repository: threads of messages, each one owned by a single tenant."""

from __future__ import annotations

import builtins
from datetime import UTC, datetime
from enum import StrEnum

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator
from sqlalchemy import delete, select, update

from bus.errors import StoreError
from bus.store.repository import Repository, insert_ignoring_conflicts, utcnow
from bus.store.tables import ConversationRow, MessageRow

TITLE_MAX_CHARS = 120


class ConversationNotFound(StoreError):
    """The tenant has no conversation with this id (it may belong to another tenant)."""

    code = "conversation_not_found"
    hint = "start a new conversation, or pass the id of one of your own"


class MessageRole(StrEnum):
    """Who wrote a message."""

    USER = "user"
    ASSISTANT = "assistant"


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, from_attributes=True)

    @field_validator("created_at", "updated_at", check_fields=False)
    @classmethod
    def _in_utc(cls, value: datetime) -> datetime:
        # One zone everywhere, so records compare and serialise the same on every backend.
        return value.astimezone(UTC)


class ConversationRecord(_Record):
    """A conversation as the store holds it; immutable, detached from any session."""

    id: str = Field(min_length=1, max_length=64)
    tenant_id: str = Field(min_length=1, max_length=64)
    subject: str = Field(max_length=255)
    title: str | None = Field(default=None, max_length=TITLE_MAX_CHARS)
    created_at: AwareDatetime
    updated_at: AwareDatetime


class MessageRecord(_Record):
    """One message of a conversation; ``id`` grows in the order messages were appended."""

    id: int
    conversation_id: str = Field(min_length=1, max_length=64)
    tenant_id: str = Field(min_length=1, max_length=64)
    run_id: str | None = Field(default=None, max_length=64)
    role: MessageRole
    content: str
    created_at: AwareDatetime


def make_title(text: str | None) -> str | None:
    """A one-line title from ``text`` (the first question): whitespace folded, 120 chars."""
    if text is None:
        return None
    return " ".join(text.split())[:TITLE_MAX_CHARS] or None


class ConversationStore(Repository):
    """Reads and writes conversations and their messages.

    A conversation belongs to the tenant that created it; to any other tenant it does not
    exist, whatever its id.

    Args:
        db: an engine (the store makes its own session factory) or a session factory. The
            caller owns the engine and disposes of it.
    """

    async def ensure(
        self, tenant_id: str, subject: str, conversation_id: str, title: str | None
    ) -> ConversationRecord:
        """The tenant's conversation with this id, created first if it does not exist.

        Idempotent for the tenant: an existing conversation comes back unchanged (its title
        and subject stay as they were first stored).

        Args:
            tenant_id: who owns the conversation.
            subject: who started it.
            conversation_id: its id, chosen by the caller.
            title: its title, usually the first question; folded to one line of at most
                120 characters.

        Raises:
            ConversationNotFound: the id belongs to another tenant's conversation.
            StoreError: the database failed.
        """
        now = utcnow()
        values = {
            "id": conversation_id,
            "tenant_id": tenant_id,
            "subject": subject,
            "title": make_title(title),
            "created_at": now,
            "updated_at": now,
        }
        async with self._session("create the conversation") as session:
            # Insert-or-nothing, then read: race-free on both databases, and a conversation
            # of another tenant is never overwritten.
            await session.execute(
                insert_ignoring_conflicts(session, ConversationRow, values, ["id"])
            )
            row = await session.scalar(
                select(ConversationRow).where(ConversationRow.id == conversation_id)
            )
            if row is None or row.tenant_id != tenant_id:
                raise ConversationNotFound(f"no conversation {conversation_id!r}")
            return ConversationRecord.model_validate(row)

    async def get(self, tenant_id: str, conversation_id: str) -> ConversationRecord | None:
        """The tenant's conversation with this id, or None (also when another tenant owns it)."""
        async with self._session("read the conversation") as session:
            row = await session.scalar(
                select(ConversationRow).where(
                    ConversationRow.id == conversation_id, ConversationRow.tenant_id == tenant_id
                )
            )
            return None if row is None else ConversationRecord.model_validate(row)

    async def list(self, tenant_id: str, limit: int = 50) -> builtins.list[ConversationRecord]:
        """The tenant's conversations, the most recently active first.

        Raises:
            ValueError: ``limit`` is below 1.
        """
        _check_limit(limit)
        stmt = (
            select(ConversationRow)
            .where(ConversationRow.tenant_id == tenant_id)
            .order_by(ConversationRow.updated_at.desc(), ConversationRow.id.desc())
            .limit(limit)
        )
        async with self._session("list conversations") as session:
            rows = await session.scalars(stmt)
            return [ConversationRecord.model_validate(row) for row in rows]

    async def history(
        self, tenant_id: str, conversation_id: str, limit: int = 20
    ) -> builtins.list[MessageRecord]:
        """The last ``limit`` messages of the conversation, oldest first.

        Another tenant's conversation, or an unknown id, has no messages.

        Raises:
            ValueError: ``limit`` is below 1.
        """
        _check_limit(limit)
        stmt = (
            select(MessageRow)
            .where(MessageRow.conversation_id == conversation_id, MessageRow.tenant_id == tenant_id)
            .order_by(MessageRow.id.desc())
            .limit(limit)
        )
        async with self._session("read the conversation history") as session:
            rows = await session.scalars(stmt)
            return [MessageRecord.model_validate(row) for row in reversed(rows.all())]

    async def append(
        self,
        tenant_id: str,
        conversation_id: str,
        role: MessageRole,
        content: str,
        run_id: str | None,
    ) -> None:
        """Add a message to the conversation and mark the conversation as active now.

        Idempotent per run and role: appending a run's message again (a redelivered
        finalizer) changes nothing, not even the conversation's ``updated_at``. A message
        without a run is never deduplicated.

        Args:
            tenant_id: who owns the conversation.
            conversation_id: the conversation to add to.
            role: who wrote the message.
            content: the message text.
            run_id: the run the message belongs to.

        Raises:
            ConversationNotFound: the tenant has no conversation with this id.
            StoreError: the database failed.
        """
        now = utcnow()
        values = {
            "conversation_id": conversation_id,
            "tenant_id": tenant_id,
            "run_id": run_id,
            "role": MessageRole(role).value,
            "content": content,
            "created_at": now,
        }
        conflict_on = ["conversation_id", "run_id", "role"]
        async with self._session("append to the conversation") as session:
            owned = await session.scalar(
                select(ConversationRow.id).where(
                    ConversationRow.id == conversation_id, ConversationRow.tenant_id == tenant_id
                )
            )
            if owned is None:
                raise ConversationNotFound(f"no conversation {conversation_id!r}")
            stmt = insert_ignoring_conflicts(session, MessageRow, values, conflict_on)
            if await session.scalar(stmt.returning(MessageRow.id)) is None:
                return
            await session.execute(
                update(ConversationRow)
                .where(ConversationRow.id == conversation_id)
                .values(updated_at=now)
                .execution_options(synchronize_session=False)
            )

    async def rename(self, tenant_id: str, conversation_id: str, title: str) -> bool:
        """Give the tenant's conversation a new title (folded to one line of 120 chars).

        Returns:
            Whether it existed; False also when another tenant owns the id (it is untouched).
        """
        stmt = (
            update(ConversationRow)
            .where(ConversationRow.id == conversation_id, ConversationRow.tenant_id == tenant_id)
            .values(title=make_title(title))
            .execution_options(synchronize_session=False)
        )
        async with self._session("rename the conversation") as session:
            result = await session.execute(stmt)
            return bool(result.rowcount)  # pyright: ignore[reportAttributeAccessIssue]

    async def delete(self, tenant_id: str, conversation_id: str) -> bool:
        """Delete the tenant's conversation and, by cascade, its messages.

        Returns:
            Whether it existed; False also when another tenant owns the id (it is untouched).
        """
        stmt = (
            delete(ConversationRow)
            .where(ConversationRow.id == conversation_id, ConversationRow.tenant_id == tenant_id)
            .returning(ConversationRow.id)
            .execution_options(synchronize_session=False)
        )
        async with self._session("delete the conversation") as session:
            return await session.scalar(stmt) is not None


def _check_limit(limit: int) -> None:
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
