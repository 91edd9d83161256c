"""The conversations repository: threads of messages, each owned by one user of one tenant."""

from __future__ import annotations

import builtins
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator
from sqlalchemy import Connection, Select, delete, literal, select, update
from sqlalchemy.orm import aliased

# The largest message id is checked on the request side too: declared with the wire models.
from agentbus_contracts.ids import MAX_MESSAGE_ID as MAX_MESSAGE_ID
from bus.errors import StoreError
from bus.store.repository import (
    Repository,
    insert_ignoring,
    insert_ignoring_conflicts,
    utcnow,
)
from bus.store.scope import Scope, apply_scope_sync
from bus.store.tables import ConversationRow, MessageRow

TITLE_MAX_CHARS = 120


class ConversationNotFound(StoreError):
    """No conversation with this id for the caller (it may be another user's or tenant's)."""

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
    active_message_id: int | None = None
    """The last message of the active branch (None: no message yet)."""


class MessageRecord(_Record):
    """One message of a conversation; ``id`` grows in the order messages were appended."""

    id: int
    conversation_id: str = Field(min_length=1, max_length=64)
    tenant_id: str = Field(min_length=1, max_length=64)
    run_id: str | None = Field(default=None, max_length=64)
    role: MessageRole
    content: str
    created_at: AwareDatetime
    status: str | None = None
    """None for a whole message; ``interrupted`` for a partial answer cut short."""
    parent_id: int | None = None
    """The message it follows (None: the conversation's start)."""


def make_title(text: str | None) -> str | None:
    """A one-line title from ``text`` (the first question): whitespace folded, 120 chars."""
    if text is None:
        return None
    return " ".join(text.split())[:TITLE_MAX_CHARS] or None


class _Free(Exception):
    """Rolls a probe's insert back: the id was free."""


class ConversationStore(Repository):
    """Reads and writes conversations and their messages.

    A conversation belongs to the user (subject) of the tenant who started it. Reads see
    it under that user's scope or a tenant-wide one (an admin); writes (continuing it,
    appending, deleting) only under the owner's. To anyone else it does not exist,
    whatever its id.

    Args:
        db: an engine (the store makes its own session factory) or a session factory. The
            caller owns the engine and disposes of it.
    """

    async def ensure(
        self, owner: Scope, conversation_id: str, title: str | None
    ) -> ConversationRecord:
        """The owner's conversation with this id, created first if it does not exist.

        Idempotent for the owner: an existing conversation comes back unchanged (its title
        stays as it was first stored).

        Args:
            owner: the tenant and user who own (or now start) the conversation.
            conversation_id: its id, chosen by the caller.
            title: its title, usually the first question; folded to one line of at most
                120 characters.

        Raises:
            ConversationNotFound: the id belongs to another user's or tenant's conversation.
            StoreError: the database failed.
        """
        values = _new_row(owner, conversation_id, title)
        group = self._group_commit()
        insert = insert_ignoring(group.dialect, ConversationRow, values, ["id"])
        mine = select(ConversationRow.__table__).where(
            ConversationRow.id == conversation_id, owner.where(ConversationRow, owner=True)
        )

        # Group-committed with the run path's other writes: one writer per process, so a
        # burst of runs never fails with SQLite's "database is locked".
        def work(conn: Connection) -> ConversationRecord:
            apply_scope_sync(conn, owner)
            # Insert-or-nothing, then read: race-free on both databases, and a
            # conversation of another user or tenant is never overwritten.
            conn.execute(insert)
            row = conn.execute(mine).mappings().first()
            if row is None:
                raise ConversationNotFound(f"no conversation {conversation_id!r}")
            return ConversationRecord.model_validate(dict(row))

        return await group.run(work, "create the conversation")

    async def probe(self, scope: Scope, conversation_id: str) -> ConversationRecord | None:
        """Whether a run of ``scope`` may name this conversation id; writes nothing.

        Returns:
            None when the id is free (the run will start the conversation), the
            conversation when ``scope`` sees it (compare its subject to tell an admin's
            view of another user's conversation from the caller's own).

        Raises:
            ConversationNotFound: another user or tenant has a conversation with this id.
            StoreError: the database failed.
        """
        # The insert is rolled back whatever happens. It asks the unique index, which sees
        # every row, whether the id is taken; a SELECT could not tell on Postgres, where
        # row-level security hides other users' rows from this transaction.
        values = _new_row(scope, conversation_id, None)
        try:
            async with self._scoped(scope, "check the conversation") as session:
                stmt = insert_ignoring_conflicts(session, ConversationRow, values, ["id"])
                if await session.scalar(stmt.returning(ConversationRow.id)) is not None:
                    raise _Free
                row = await session.scalar(
                    select(ConversationRow).where(
                        ConversationRow.id == conversation_id, scope.where(ConversationRow)
                    )
                )
        except _Free:
            return None
        if row is None:
            raise ConversationNotFound(f"no conversation {conversation_id!r}")
        return ConversationRecord.model_validate(row)

    async def get(self, scope: Scope, conversation_id: str) -> ConversationRecord | None:
        """The conversation with this id if ``scope`` sees it, else None."""
        async with self._scoped(scope, "read the conversation") as session:
            row = await session.scalar(
                select(ConversationRow).where(
                    ConversationRow.id == conversation_id, scope.where(ConversationRow)
                )
            )
            return None if row is None else ConversationRecord.model_validate(row)

    async def list(self, scope: Scope, limit: int = 50) -> builtins.list[ConversationRecord]:
        """The conversations ``scope`` sees, the most recently active first.

        Raises:
            ValueError: ``limit`` is below 1.
        """
        _check_limit(limit)
        stmt = (
            select(ConversationRow)
            .where(scope.where(ConversationRow))
            .order_by(ConversationRow.updated_at.desc(), ConversationRow.id.desc())
            .limit(limit)
        )
        async with self._scoped(scope, "list conversations") as session:
            rows = await session.scalars(stmt)
            return [ConversationRecord.model_validate(row) for row in rows]

    async def history(
        self,
        scope: Scope,
        conversation_id: str,
        limit: int = 20,
        *,
        leaf: int | None = None,
    ) -> builtins.list[MessageRecord]:
        """The last ``limit`` messages of a branch of the conversation, oldest first.

        The branch ends at ``leaf`` (default: the conversation's active branch) and is
        followed up through each message's parent, never across to another branch. A
        conversation ``scope`` does not see, or an unknown id, has no messages.

        Raises:
            ValueError: ``limit`` is below 1.
        """
        _check_limit(limit)
        async with self._scoped(scope, "read the conversation history") as session:
            if leaf is None:
                leaf = await session.scalar(
                    select(ConversationRow.active_message_id).where(
                        ConversationRow.id == conversation_id, scope.where(ConversationRow)
                    )
                )
            if leaf is None:
                return []
            rows = await session.scalars(_branch(scope, conversation_id, leaf, limit))
            return [MessageRecord.model_validate(row) for row in rows.all()]

    async def tree(
        self, scope: Scope, conversation_id: str, limit: int = 500
    ) -> builtins.list[MessageRecord]:
        """Every message of the conversation (each names its parent), oldest first."""
        _check_limit(limit)
        stmt = (
            select(MessageRow)
            .join(ConversationRow, ConversationRow.id == MessageRow.conversation_id)
            .where(
                MessageRow.conversation_id == conversation_id,
                MessageRow.tenant_id == ConversationRow.tenant_id,
                scope.where(ConversationRow),
            )
            .order_by(MessageRow.id)
            .limit(limit)
        )
        async with self._scoped(scope, "read the conversation tree") as session:
            rows = await session.scalars(stmt)
            return [MessageRecord.model_validate(row) for row in rows.all()]

    async def message(
        self, scope: Scope, conversation_id: str, message_id: int
    ) -> MessageRecord | None:
        """One message of the conversation, if ``scope`` sees it."""
        if not 0 < message_id <= MAX_MESSAGE_ID:
            return None
        stmt = (
            select(MessageRow)
            .join(ConversationRow, ConversationRow.id == MessageRow.conversation_id)
            .where(
                MessageRow.id == message_id,
                MessageRow.conversation_id == conversation_id,
                MessageRow.tenant_id == ConversationRow.tenant_id,
                scope.where(ConversationRow),
            )
        )
        async with self._scoped(scope, "read the message") as session:
            row = await session.scalar(stmt)
            return None if row is None else MessageRecord.model_validate(row)

    async def select_branch(
        self, owner: Scope, conversation_id: str, message_id: int
    ) -> int | None:
        """Make the branch through ``message_id`` the active one (the owner's only).

        The branch ends where ``message_id``'s newest descendants lead (at each message its
        newest child), so picking a turn shows everything that was asked after it.

        Returns:
            The active branch's last message, or None when the owner has no such message.
        """
        if not 0 < message_id <= MAX_MESSAGE_ID:
            return None
        async with self._scoped(owner, "choose the branch") as session:
            owned = await session.scalar(
                select(ConversationRow.id).where(
                    ConversationRow.id == conversation_id,
                    owner.where(ConversationRow, owner=True),
                )
            )
            if owned is None:
                return None
            found = await session.scalar(
                select(MessageRow.id).where(
                    MessageRow.id == message_id, MessageRow.conversation_id == conversation_id
                )
            )
            if found is None:
                return None
            rows = (
                await session.execute(
                    select(MessageRow.id, MessageRow.parent_id).where(
                        MessageRow.conversation_id == conversation_id
                    )
                )
            ).all()
            newest: dict[int, int] = {}
            for child, parent in rows:
                if parent is not None and child > newest.get(parent, 0):
                    newest[parent] = child
            leaf = message_id
            while leaf in newest:
                leaf = newest[leaf]
            await session.execute(
                update(ConversationRow)
                .where(ConversationRow.id == conversation_id)
                .values(active_message_id=leaf)
            )
            return leaf

    async def append(
        self,
        owner: Scope,
        conversation_id: str,
        role: MessageRole,
        content: str,
        run_id: str | None,
        *,
        parent_id: int | None = None,
    ) -> int:
        """Add a message to the conversation; it becomes the end of the active branch.

        Idempotent per run and role: appending a run's message again (a redelivered
        finalizer) changes nothing, not even the conversation's ``updated_at``, and returns
        the message stored the first time. A message without a run is never deduplicated.

        Args:
            owner: the tenant and user who own the conversation.
            conversation_id: the conversation to add to.
            role: who wrote the message.
            content: the message text.
            run_id: the run the message belongs to.
            parent_id: the message it follows: None for the end of the active branch, 0
                for the conversation's start (a new branch there); a message of another
                conversation counts as 0.

        Returns:
            The message's id.

        Raises:
            ConversationNotFound: the owner has no conversation with this id.
            StoreError: the database failed.
        """
        group = self._group_commit()

        def work(conn: Connection) -> int:  # group-committed, as `ensure`
            apply_scope_sync(conn, owner)
            return append_sync(
                conn, owner, conversation_id, role, content, run_id, parent_id=parent_id
            )

        return await group.run(work, "append to the conversation")

    async def rename(self, owner: Scope, conversation_id: str, title: str) -> bool:
        """Give the owner's conversation a new title (folded to one line of 120 chars).

        Returns:
            Whether it existed; False also when another user or tenant owns the id (it is
            untouched, even for an admin: admins read, owners rename).
        """
        stmt = (
            update(ConversationRow)
            .where(ConversationRow.id == conversation_id, owner.where(ConversationRow, owner=True))
            .values(title=make_title(title))
            .returning(ConversationRow.id)
            .execution_options(synchronize_session=False)
        )
        async with self._scoped(owner, "rename the conversation") as session:
            return await session.scalar(stmt) is not None

    async def delete(self, owner: Scope, conversation_id: str) -> bool:
        """Delete the owner's conversation and, by cascade, its messages.

        Returns:
            Whether it existed; False also when another user or tenant owns the id (it is
            untouched, even for an admin: admins read, owners delete).
        """
        stmt = (
            delete(ConversationRow)
            .where(ConversationRow.id == conversation_id, owner.where(ConversationRow, owner=True))
            .returning(ConversationRow.id)
            .execution_options(synchronize_session=False)
        )
        async with self._scoped(owner, "delete the conversation") as session:
            return await session.scalar(stmt) is not None


def append_sync(
    conn: Connection,
    owner: Scope,
    conversation_id: str,
    role: MessageRole,
    content: str,
    run_id: str | None,
    *,
    parent_id: int | None = None,
    status: str | None = None,
) -> int:
    """`ConversationStore.append` inside a transaction of the caller's (scope already set)."""
    parent = _parent_in(conn, owner, conversation_id, parent_id)
    now = utcnow()
    values = {
        "conversation_id": conversation_id,
        "tenant_id": owner.tenant_id,
        "run_id": run_id,
        "role": MessageRole(role).value,
        "content": content,
        "created_at": now,
        "status": status,
        "parent_id": parent or None,
    }
    added, new = _insert_once(conn, values)
    if not new:  # appended before (a redelivery): that message, unchanged
        return added
    conn.execute(
        update(ConversationRow)
        .where(ConversationRow.id == conversation_id)
        .values(updated_at=now, active_message_id=added)
    )
    return int(added)


def append_exchange_sync(
    conn: Connection,
    owner: Scope,
    conversation_id: str,
    run_id: str,
    question: str,
    answer: str,
    *,
    parent_id: int | None = None,
) -> int:
    """A run's question and its answer, appended inside a transaction of the caller's
    (scope already set), as two `append_sync` calls would: the question after
    ``parent_id`` (None: the end of the active branch), the answer after the question, the
    active branch ending at the answer. Idempotent per run and role.

    The answer's parent is the question just written and the conversation moves once: the
    statements two appends would spend on reading them back are not sent.

    Returns:
        The id of the question's message.
    """
    parent = _parent_in(conn, owner, conversation_id, parent_id)
    now = utcnow()
    row = {"conversation_id": conversation_id, "tenant_id": owner.tenant_id, "run_id": run_id,
           "created_at": now, "status": None}  # fmt: skip
    ids: list[int] = []
    for role, content in ((MessageRole.USER, question), (MessageRole.ASSISTANT, answer)):
        values = row | {"role": role.value, "content": content, "parent_id": parent or None}
        added, new = _insert_once(conn, values)  # not new: appended before (a redelivery)
        ids.append(added)
        parent = added
        if new and role == MessageRole.ASSISTANT:
            conn.execute(
                update(ConversationRow)
                .where(ConversationRow.id == conversation_id)
                .values(updated_at=now, active_message_id=added)
            )
    return ids[0]


def _parent_in(
    conn: Connection, owner: Scope, conversation_id: str, parent_id: int | None
) -> int | None:
    """The parent a new message of ``owner``'s conversation takes: ``parent_id`` when it is
    a message of this conversation (None: the end of the active branch), else none.

    Raises:
        ConversationNotFound: ``owner`` has no such conversation.
    """
    active = conn.execute(
        select(ConversationRow.active_message_id).where(
            ConversationRow.id == conversation_id, owner.where(ConversationRow, owner=True)
        )
    ).first()
    if active is None:
        raise ConversationNotFound(f"no conversation {conversation_id!r}")
    parent = active[0] if parent_id is None else parent_id
    if not parent:
        return None
    mine = select(MessageRow.id).where(
        MessageRow.id == parent, MessageRow.conversation_id == conversation_id
    )
    return parent if conn.execute(mine).scalar() is not None else None


def _insert_once(conn: Connection, values: dict[str, Any]) -> tuple[int, bool]:
    """Insert a message unless its run already has one in that role: (its id, whether this
    call inserted it)."""
    conflict_on = ["conversation_id", "run_id", "role"]
    insert = insert_ignoring(conn.dialect.name, MessageRow, values, conflict_on)
    added = conn.execute(insert.returning(MessageRow.id)).scalar()
    if added is not None:
        return int(added), True
    earlier = select(MessageRow.id).where(
        MessageRow.conversation_id == values["conversation_id"],
        MessageRow.run_id == values["run_id"],
        MessageRow.role == values["role"],
    )
    return int(conn.execute(earlier).scalar_one()), False


def _branch(scope: Scope, conversation_id: str, leaf: int, limit: int) -> Select[MessageRow]:
    """The messages from ``leaf`` up through its parents (at most ``limit``), oldest first."""
    start = (
        select(MessageRow.id, MessageRow.parent_id, literal(1).label("depth"))
        .where(MessageRow.id == leaf, MessageRow.conversation_id == conversation_id)
        .cte("branch", recursive=True)
    )
    up = aliased(MessageRow)
    path = start.union_all(
        select(up.id, up.parent_id, (start.c.depth + 1).label("depth")).where(
            up.id == start.c.parent_id, up.conversation_id == conversation_id, start.c.depth < limit
        )
    )
    return (
        select(MessageRow)
        .join(path, path.c.id == MessageRow.id)
        .join(ConversationRow, ConversationRow.id == MessageRow.conversation_id)
        .where(MessageRow.tenant_id == ConversationRow.tenant_id, scope.where(ConversationRow))
        .order_by(MessageRow.id)
    )


def _new_row(owner: Scope, conversation_id: str, title: str | None) -> dict[str, object]:
    now = utcnow()
    return {
        "id": conversation_id,
        "tenant_id": owner.tenant_id,
        "subject": owner.subject,
        "title": make_title(title),
        "created_at": now,
        "updated_at": now,
    }


def _check_limit(limit: int) -> None:
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
