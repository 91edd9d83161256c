"""Long-term memories: what a user said about themselves, kept across conversations.

One row per (tenant, user, topic): a newer statement on a topic (the office moved)
replaces the older one, and an older one never replaces a newer one, so records applied
late or twice leave the newest statement standing. Rows are written by the recorder from
the memory step's ledger records (`remember`, idempotent by record key), read by the
``memory`` retrieval source (`for_question`), and listed, edited and deleted by their
owner only: no scope, admin or not, reads another user's memories.
"""

from __future__ import annotations

import builtins
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from pydantic import AwareDatetime, BaseModel, ConfigDict, field_validator
from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bus.errors import StoreError
from bus.store.memory_tables import MemoryRow
from bus.store.repository import Repository, utcnow
from bus.store.scope import Scope

#: The longest memory text, as extracted or as its owner edits it.
MAX_MEMORY_CHARS = 500
#: Memories one user keeps at most (the least recently changed go first); reads never
#: load more.
MAX_MEMORIES = 200


class MemoryNotFound(StoreError):
    """The user has no memory with this id (or it is another user's)."""

    code = "memory_not_found"


class MemoryRecord(BaseModel):
    """A memory as the store holds it; immutable, detached from any session."""

    model_config = ConfigDict(frozen=True, from_attributes=True)

    id: str
    tenant_id: str
    subject: str
    topic: str
    text: str
    run_id: str | None = None
    conversation_id: str | None = None
    message_id: int | None = None
    said_at: AwareDatetime
    edited: bool = False
    created_at: AwareDatetime
    updated_at: AwareDatetime

    @field_validator("said_at", "created_at", "updated_at")
    @classmethod
    def _in_utc(cls, value: datetime) -> datetime:
        return value.astimezone(UTC)


@dataclass(frozen=True, slots=True)
class MemoryWrite:
    """One statement to remember, with where it was said (the memory step's record).

    Attributes:
        key: the ledger record's key: the same on every delivery.
    """

    key: str
    tenant_id: str
    subject: str
    topic: str
    text: str
    said_at: datetime
    run_id: str | None = None
    conversation_id: str | None = None
    message_id: int | None = None


_WORD = re.compile(r"\w{3,}")


def _terms(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


class MemoryStore(Repository):
    """Reads and writes long-term memories, always as one user (`Scope.user`)."""

    async def remember(self, writes: Sequence[MemoryWrite]) -> int:
        """Apply statements, one transaction per user; how many rows changed.

        A statement whose key was written already, or that is older than the topic's
        current one, changes nothing.
        """
        changed = 0
        if not writes:
            return 0
        # One tenant's rows per scope; a batch may mix tenants (RLS needs each its own).
        by_owner: dict[tuple[str, str], list[MemoryWrite]] = {}
        for w in writes:
            by_owner.setdefault((w.tenant_id, w.subject), []).append(w)
        for (tenant, subject), owned in by_owner.items():
            owner = Scope.user(tenant, subject)
            async with self._scoped(owner, "remember") as session:
                inserted = False
                for w in owned:
                    text = w.text.strip()[:MAX_MEMORY_CHARS]
                    row = await session.scalar(
                        select(MemoryRow).where(
                            owner.where(MemoryRow, owner=True), MemoryRow.topic == w.topic
                        )
                    )
                    now = utcnow()
                    if row is None:
                        session.add(
                            MemoryRow(
                                id=uuid.uuid4().hex,
                                tenant_id=tenant,
                                subject=subject,
                                topic=w.topic,
                                text=text,
                                run_id=w.run_id,
                                conversation_id=w.conversation_id,
                                message_id=w.message_id,
                                record_key=w.key,
                                said_at=w.said_at,
                                edited=False,
                                created_at=now,
                                updated_at=now,
                            )
                        )
                        changed += 1
                        inserted = True
                        continue
                    if row.record_key == w.key or row.said_at >= w.said_at:
                        continue
                    row.text = text
                    row.run_id = w.run_id
                    row.conversation_id = w.conversation_id
                    row.message_id = w.message_id
                    row.record_key = w.key
                    row.said_at = w.said_at
                    row.edited = False
                    row.updated_at = now
                    changed += 1
                await session.flush()
                if inserted:
                    await self._keep_newest(session, owner)
        return changed

    @staticmethod
    async def _keep_newest(session: AsyncSession, owner: Scope) -> None:
        """Drop the owner's least recently changed memories past ``MAX_MEMORIES``."""
        kept = (
            select(MemoryRow.id)
            .where(owner.where(MemoryRow, owner=True))
            .order_by(MemoryRow.updated_at.desc(), MemoryRow.id)
            .limit(MAX_MEMORIES)
        )
        await session.execute(
            delete(MemoryRow)
            .where(owner.where(MemoryRow, owner=True), MemoryRow.id.not_in(kept))
            .execution_options(synchronize_session=False)
        )

    async def list(self, owner: Scope, limit: int = MAX_MEMORIES) -> builtins.list[MemoryRecord]:
        """The owner's memories, the most recently changed first."""
        if limit < 1:
            raise ValueError("limit must be at least 1")
        stmt = (
            select(MemoryRow)
            .where(owner.where(MemoryRow, owner=True))
            .order_by(MemoryRow.updated_at.desc(), MemoryRow.id)
            .limit(min(limit, MAX_MEMORIES))
        )
        async with self._scoped(owner, "list the memories") as session:
            return [MemoryRecord.model_validate(r) for r in await session.scalars(stmt)]

    async def count(self, owner: Scope) -> int:
        """How many memories the owner has."""
        stmt = select(func.count()).select_from(MemoryRow).where(owner.where(MemoryRow, owner=True))
        async with self._scoped(owner, "count the memories") as session:
            return int(await session.scalar(stmt) or 0)

    async def for_question(
        self, owner: Scope, query: str, limit: int = 8
    ) -> builtins.list[MemoryRecord]:
        """The owner's memories for a question: those sharing words with it first, then
        the most recent (a preference such as the answer language applies to every
        question), at most ``limit``."""
        found = await self.list(owner)
        wanted = _terms(query)
        ranked = sorted(enumerate(found), key=lambda p: (-len(wanted & _terms(p[1].text)), p[0]))
        return [m for _, m in ranked[:limit]]

    async def edit(self, owner: Scope, memory_id: str, text: str) -> MemoryRecord:
        """Change the text of one of the owner's memories (its provenance stays).

        Raises:
            MemoryNotFound: the owner has no such memory.
            ValueError: the text is empty or longer than ``MAX_MEMORY_CHARS``.
        """
        text = text.strip()
        if not text or len(text) > MAX_MEMORY_CHARS:
            raise ValueError(f"a memory is 1 to {MAX_MEMORY_CHARS} characters")
        stmt = (
            update(MemoryRow)
            .where(MemoryRow.id == memory_id, owner.where(MemoryRow, owner=True))
            .values(text=text, edited=True, updated_at=utcnow())
            .returning(MemoryRow.id)
            .execution_options(synchronize_session=False)
        )
        async with self._scoped(owner, "edit the memory") as session:
            if (await session.execute(stmt)).scalar() is None:
                raise MemoryNotFound(f"no memory {memory_id!r}")
            row = await session.scalar(select(MemoryRow).where(MemoryRow.id == memory_id))
            assert row is not None
            return MemoryRecord.model_validate(row)

    async def delete(self, owner: Scope, memory_id: str) -> bool:
        """Delete one of the owner's memories; whether it had it."""
        async with self._scoped(owner, "delete the memory") as session:
            gone = await session.execute(
                delete(MemoryRow)
                .where(MemoryRow.id == memory_id, owner.where(MemoryRow, owner=True))
                .returning(MemoryRow.id)
                .execution_options(synchronize_session=False)
            )
            return gone.scalar() is not None

    async def delete_for_user(self, tenant_id: str, subject: str) -> int:
        """Delete every memory of one user (erasure); how many there were."""
        owner = Scope.user(tenant_id, subject)
        async with self._scoped(owner, "delete the user's memories") as session:
            gone = await session.execute(
                delete(MemoryRow)
                .where(owner.where(MemoryRow, owner=True))
                .returning(MemoryRow.id)
                .execution_options(synchronize_session=False)
            )
            return len(gone.all())
