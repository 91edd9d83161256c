"""Conversation summaries: the older part of a branch folded into text, written once.

A summary covers the path from a conversation's start through one message (``through``).
A conversation is a tree and its messages never change, so that path, and so the summary,
is the same for every branch through the message: one row per (conversation, message)
serves them all, and a branch that left the path before the message never meets it.

Writes are insert-if-absent on that key, read back in the same transaction: when two
deliveries of one step (a redelivery, a reclaim that overlapped) both fold the same turns,
the first row stays, and both go on with its text, so no later turn sees a second,
different summary.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator
from sqlalchemy import Connection, Select, literal, select
from sqlalchemy.orm import aliased

from bus.errors import StoreError
from bus.store.conversations import ConversationNotFound, MessageRecord
from bus.store.repository import Repository, insert_ignoring, utcnow
from bus.store.scope import Scope, apply_scope_sync
from bus.store.summary_tables import SummaryRow
from bus.store.tables import ConversationRow, MessageRow

MAX_WALK = 5000
"""Messages a branch's walk back to its newest summary reads at most."""


class SummaryRecord(BaseModel):
    """A summary as the store holds it; immutable, detached from any session."""

    model_config = ConfigDict(frozen=True, from_attributes=True)

    conversation_id: str = Field(min_length=1, max_length=64)
    through_message_id: int = Field(description="The last message it covers.")
    tenant_id: str = Field(min_length=1, max_length=64)
    subject: str = Field(max_length=255)
    content: str
    messages: int = Field(ge=1, description="How many messages of the path it covers.")
    run_id: str | None = None
    created_at: AwareDatetime

    @field_validator("created_at")
    @classmethod
    def _in_utc(cls, value: datetime) -> datetime:
        return value.astimezone(UTC)


@dataclass(frozen=True, slots=True)
class BranchContext:
    """What a branch holds for the model: its newest summary and the messages after it.

    Attributes:
        summary: the newest summary on the branch, None if it has none.
        messages: the branch's messages after the summary (from its start without one),
            oldest first.
        complete: False when the walk stopped at ``MAX_WALK`` (or the caller's limit)
            before reaching a summary or the branch's start: older messages exist that
            ``messages`` does not hold.
    """

    summary: SummaryRecord | None
    messages: list[MessageRecord]
    complete: bool = True


class SummaryStore(Repository):
    """Reads and writes conversation summaries (the conversation's owner writes them)."""

    async def put(
        self,
        owner: Scope,
        conversation_id: str,
        through_message_id: int,
        content: str,
        *,
        messages: int,
        run_id: str | None,
    ) -> SummaryRecord:
        """Store the summary through this message unless one is stored; return the stored one.

        Returns:
            The summary the store holds for (conversation, message): this one, or the one
            written first (its text wins).

        Raises:
            ConversationNotFound: the owner has no conversation with this id.
            StoreError: the message is not one of the conversation's, or the database failed.
        """
        group = self._group_commit()
        values = {
            "conversation_id": conversation_id,
            "through_message_id": through_message_id,
            "tenant_id": owner.tenant_id,
            "subject": owner.subject,
            "content": content,
            "messages": messages,
            "run_id": run_id,
            "created_at": utcnow(),
        }
        insert = insert_ignoring(
            group.dialect, SummaryRow, values, ["conversation_id", "through_message_id"]
        )
        owned = select(ConversationRow.id).where(
            ConversationRow.id == conversation_id, owner.where(ConversationRow, owner=True)
        )
        message = select(MessageRow.id).where(
            MessageRow.id == through_message_id, MessageRow.conversation_id == conversation_id
        )
        stored = _one(conversation_id, through_message_id)

        def work(conn: Connection) -> SummaryRecord:
            apply_scope_sync(conn, owner)
            if conn.execute(owned).first() is None:
                raise ConversationNotFound(f"no conversation {conversation_id!r}")
            if conn.execute(message).first() is None:
                raise StoreError(
                    f"message {through_message_id} is not in conversation {conversation_id!r}"
                )
            conn.execute(insert)
            row = conn.execute(stored).mappings().one()
            return SummaryRecord.model_validate(dict(row))

        return await group.run(work, "store the conversation summary")

    async def get(
        self, scope: Scope, conversation_id: str, through_message_id: int
    ) -> SummaryRecord | None:
        """The summary through this message, if ``scope`` sees it."""
        stmt = _one(conversation_id, through_message_id).where(scope.where(SummaryRow))
        async with self._scoped(scope, "read the conversation summary") as session:
            row = (await session.execute(stmt)).mappings().first()
            return None if row is None else SummaryRecord.model_validate(dict(row))

    async def list(self, scope: Scope, conversation_id: str) -> builtins.list[SummaryRecord]:
        """Every summary of the conversation ``scope`` sees, by the message they end at."""
        stmt = (
            select(SummaryRow.__table__)
            .where(SummaryRow.conversation_id == conversation_id, scope.where(SummaryRow))
            .order_by(SummaryRow.through_message_id)
        )
        async with self._scoped(scope, "list the conversation summaries") as session:
            rows = (await session.execute(stmt)).mappings().all()
            return [SummaryRecord.model_validate(dict(r)) for r in rows]

    async def branch(
        self, scope: Scope, conversation_id: str, leaf: int, limit: int = MAX_WALK
    ) -> BranchContext:
        """The branch ending at ``leaf``: its newest summary and the messages after it.

        The walk goes up from ``leaf`` through each message's parent and stops at the first
        message a summary ends at, so it reads only what came after the last fold. A
        conversation ``scope`` does not see has no messages and no summary.

        Raises:
            ValueError: ``limit`` is below 1.
        """
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        async with self._scoped(scope, "read the conversation branch") as session:
            rows = await session.scalars(_walk(scope, conversation_id, leaf, limit))
            found = [MessageRecord.model_validate(row) for row in rows.all()]
            if not found:
                return BranchContext(None, [])
            top = found[0]
            stop = _one(conversation_id, top.id).where(scope.where(SummaryRow))
            summary_row = (await session.execute(stop)).mappings().first()
        if summary_row is not None:
            return BranchContext(SummaryRecord.model_validate(dict(summary_row)), found[1:])
        return BranchContext(None, found, complete=top.parent_id is None)


def _one(conversation_id: str, through_message_id: int) -> Select[Any]:
    return select(SummaryRow.__table__).where(
        SummaryRow.conversation_id == conversation_id,
        SummaryRow.through_message_id == through_message_id,
    )


def _walk(scope: Scope, conversation_id: str, leaf: int, limit: int) -> Select[MessageRow]:
    """From ``leaf`` up through its parents, oldest first, stopping at a summarized message
    (included, as the walk's first row) or after ``limit`` messages."""
    summarized = select(SummaryRow.through_message_id).where(
        SummaryRow.conversation_id == conversation_id
    )
    start = (
        select(MessageRow.id, MessageRow.parent_id, literal(1).label("depth"))
        .where(MessageRow.id == leaf, MessageRow.conversation_id == conversation_id)
        .cte("branch", recursive=True)
    )
    up = aliased(MessageRow)
    path = start.union_all(
        select(up.id, up.parent_id, (start.c.depth + 1).label("depth")).where(
            up.id == start.c.parent_id,
            up.conversation_id == conversation_id,
            start.c.depth < limit,
            start.c.id.not_in(summarized),
        )
    )
    return (
        select(MessageRow)
        .join(path, path.c.id == MessageRow.id)
        .join(ConversationRow, ConversationRow.id == MessageRow.conversation_id)
        .where(MessageRow.tenant_id == ConversationRow.tenant_id, scope.where(ConversationRow))
        .order_by(MessageRow.id)
    )
