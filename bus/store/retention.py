"""Retention: how long a tenant keeps each kind of row, and the deletes that enforce it.

Each kind is deleted in small batches, one short transaction per batch, so no delete
holds a long lock: a batch's statements name at most ``limit`` rows by key.

* ``runs``: ended runs (never one in flight or paused, whatever its age), with their
  turns, their gates and their schedule ticks; the caller forgets their Redis keys
  (events, results, blobs: `bus.forget`).
* ``messages``: whole conversations nobody touched since the cutoff (their messages,
  summaries and turn bookkeeping): a conversation is a tree, so pruning single old
  messages would cut the branches that continue from them. A conversation with a run in
  flight or paused, or that a schedule asks into, is kept.
* ``checkpoints``: gates that ended (decided) or expired before the cutoff.
* ``audit``: rows from the start of the tenant's chain created before the cutoff; the
  anchor (``audit_anchors``) moves to the last row deleted, in the same transaction, so
  the rest of the chain still verifies (`bus.store.audit_chain`).

Blobs live in Redis, not here; see `bus.retention_passes`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, cast

from sqlalchemy import CursorResult, Select, and_, delete, func, or_, select, union, update
from sqlalchemy.ext.asyncio import AsyncSession

from bus.events import TERMINAL_STATUSES
from bus.retention import Kind
from bus.store.audit_chain import GENESIS
from bus.store.gate_tables import CheckpointRow
from bus.store.repository import Repository, insert_ignoring_conflicts, utcnow
from bus.store.schedule_tables import ScheduleRow, ScheduleTickRow
from bus.store.scope import Scope
from bus.store.summary_tables import SummaryRow
from bus.store.tables import (
    AuditAnchorRow,
    AuditHeadRow,
    AuditRow,
    ConversationRow,
    MessageRow,
    RunRow,
    TenantSettingsRow,
)
from bus.store.turn_tables import ConversationLockRow, TurnRow

_ENDED = sorted(s.value for s in TERMINAL_STATUSES)


def rowcount(result: Any) -> int:
    """How many rows a DELETE or UPDATE result touched."""
    return int(cast("CursorResult[Any]", result).rowcount or 0)


class RetentionStore(Repository):
    """The deletes of retention, one batch per call, each in its own transaction."""

    async def tenants(self) -> list[str]:
        """Every tenant with rows retention may delete, or with settings."""
        tables = (RunRow, ConversationRow, CheckpointRow, AuditHeadRow, TenantSettingsRow)
        stmt = union(*(select(t.tenant_id).distinct() for t in tables))
        async with self._scoped(Scope.operator(), "list the tenants") as session:
            return sorted(str(t) for t in await session.scalars(select(stmt.subquery().c[0])))

    async def policies(self) -> dict[str, dict[str, Any]]:
        """Each tenant's stored ``retention`` preference (as stored: unvalidated JSON)."""
        async with self._scoped(Scope.operator(), "read retention settings") as session:
            rows = await session.execute(
                select(TenantSettingsRow.tenant_id, TenantSettingsRow.settings)
            )
            found: dict[str, dict[str, Any]] = {}
            for tenant, settings in rows:
                value = settings.get("retention")
                if isinstance(value, dict):
                    found[str(tenant)] = cast("dict[str, Any]", value)
            return found

    async def count(
        self, tenant_id: str, kind: Kind | Literal["conversations"], before: datetime
    ) -> int:
        """How many rows of ``kind`` a pass would delete now (``--dry-run``); ``messages``
        counts the messages of the idle conversations, ``conversations`` those."""
        idle = self._idle_conversations(tenant_id, before)
        stmt = {
            "runs": self._ended_runs(tenant_id, before),
            "conversations": idle,
            "messages": select(MessageRow.id).where(
                MessageRow.tenant_id == tenant_id,
                MessageRow.conversation_id.in_(idle.order_by(None)),
            ),
            "checkpoints": self._old_gates(tenant_id, before),
            "audit": self._old_audit(tenant_id, before, None),
        }.get(kind)
        if stmt is None:
            return 0
        counted = select(func.count()).select_from(stmt.subquery())
        async with self._scoped(Scope.tenant(tenant_id), f"count {kind}") as session:
            return int(await session.scalar(counted) or 0)

    async def prune_runs(self, tenant_id: str, before: datetime, limit: int) -> list[str]:
        """Delete up to ``limit`` runs that ended before ``before``; their ids."""
        async with self._scoped(Scope.tenant(tenant_id), "prune runs") as session:
            ids = list(await session.scalars(self._ended_runs(tenant_id, before).limit(limit)))
            if ids:
                await delete_runs(session, tenant_id, ids)
            return [str(i) for i in ids]

    async def prune_conversations(
        self, tenant_id: str, before: datetime, limit: int
    ) -> tuple[int, int]:
        """Delete up to ``limit`` conversations idle since before ``before``;
        (conversations, messages) deleted."""
        async with self._scoped(Scope.tenant(tenant_id), "prune conversations") as session:
            stmt = self._idle_conversations(tenant_id, before).limit(limit)
            ids = [str(i) for i in await session.scalars(stmt)]
            if not ids:
                return 0, 0
            return await delete_conversations(session, tenant_id, ids)

    async def prune_checkpoints(self, tenant_id: str, before: datetime, limit: int) -> int:
        """Delete up to ``limit`` gates that ended or expired before ``before``."""
        async with self._scoped(Scope.tenant(tenant_id), "prune gates") as session:
            ids = list(await session.scalars(self._old_gates(tenant_id, before).limit(limit)))
            if not ids:
                return 0
            stmt = delete(CheckpointRow).where(
                CheckpointRow.tenant_id == tenant_id, CheckpointRow.id.in_(ids)
            )
            return rowcount(await session.execute(stmt))

    async def prune_audit(self, tenant_id: str, before: datetime, limit: int) -> int:
        """Delete up to ``limit`` rows from the start of the tenant's chain, created before
        ``before``, and move its anchor to the last of them (one transaction)."""
        async with self._scoped(Scope.tenant(tenant_id), "prune the audit log") as session:
            anchor = await _lock_anchor(session, tenant_id)
            rows = (
                await session.execute(self._old_audit(tenant_id, before, anchor).limit(limit))
            ).all()
            if not rows:
                return 0
            last_seq, last_hash = rows[-1].seq, rows[-1].row_hash
            await session.execute(
                delete(AuditRow).where(
                    AuditRow.tenant_id == tenant_id,
                    AuditRow.seq > anchor,
                    AuditRow.seq <= last_seq,
                )
            )
            await session.execute(
                update(AuditAnchorRow)
                .where(AuditAnchorRow.tenant_id == tenant_id)
                .values(
                    seq=last_seq,
                    last_hash=last_hash,
                    pruned_rows=AuditAnchorRow.pruned_rows + len(rows),
                    updated_at=utcnow(),
                )
            )
            return len(rows)

    async def ended_runs(self, run_ids: list[str]) -> dict[str, tuple[str, datetime]]:
        """Of these runs, those that ended: run id -> (tenant, when it ended)."""
        if not run_ids:
            return {}
        stmt = select(RunRow.id, RunRow.tenant_id, RunRow.finished_at, RunRow.updated_at).where(
            RunRow.id.in_(run_ids), RunRow.status.in_(_ENDED)
        )
        async with self._scoped(Scope.operator(), "read ended runs") as session:
            return {
                str(r.id): (str(r.tenant_id), r.finished_at or r.updated_at)
                for r in await session.execute(stmt)
            }

    @staticmethod
    def _ended_runs(tenant_id: str, before: datetime) -> Select[str]:
        # created_at first: the (tenant_id, created_at) index finds the candidates.
        return (
            select(RunRow.id)
            .where(
                RunRow.tenant_id == tenant_id,
                RunRow.created_at < before,
                RunRow.status.in_(_ENDED),
                func.coalesce(RunRow.finished_at, RunRow.updated_at) < before,
            )
            .order_by(RunRow.created_at)
        )

    @staticmethod
    def _idle_conversations(tenant_id: str, before: datetime) -> Select[str]:
        busy = select(RunRow.conversation_id).where(
            RunRow.tenant_id == tenant_id,
            RunRow.conversation_id.is_not(None),
            RunRow.status.not_in(_ENDED),
        )
        scheduled = select(ScheduleRow.conversation_id).where(ScheduleRow.tenant_id == tenant_id)
        return (
            select(ConversationRow.id)
            .where(
                ConversationRow.tenant_id == tenant_id,
                ConversationRow.updated_at < before,
                ConversationRow.id.not_in(busy),
                ConversationRow.id.not_in(scheduled),
            )
            .order_by(ConversationRow.updated_at)
        )

    @staticmethod
    def _old_gates(tenant_id: str, before: datetime) -> Select[str]:
        ended = and_(CheckpointRow.resumed_at.is_not(None), CheckpointRow.resumed_at < before)
        expired = and_(CheckpointRow.resumed_at.is_(None), CheckpointRow.expires_at < before)
        return select(CheckpointRow.id).where(
            CheckpointRow.tenant_id == tenant_id, or_(ended, expired)
        )

    @staticmethod
    def _old_audit(tenant_id: str, before: datetime, after_seq: int | None) -> Select[int, str]:
        """Rows from the chain's start created before ``before``, stopping at the first
        newer one (clocks of two processes may disagree: the chain's order wins)."""
        newer = select(func.min(AuditRow.seq)).where(
            AuditRow.tenant_id == tenant_id, AuditRow.created_at >= before
        )
        stmt = select(AuditRow.seq, AuditRow.row_hash).where(
            AuditRow.tenant_id == tenant_id,
            AuditRow.created_at < before,
            or_(newer.scalar_subquery().is_(None), AuditRow.seq < newer.scalar_subquery()),
        )
        if after_seq is not None:
            stmt = stmt.where(AuditRow.seq > after_seq)
        return stmt.order_by(AuditRow.seq)


async def _lock_anchor(session: AsyncSession, tenant_id: str) -> int:
    """Create the tenant's anchor if it has none (seq 0: the chain's start), lock it, and
    return its seq. The first statement is a write: on SQLite it takes the write lock."""
    values = {
        "tenant_id": tenant_id,
        "seq": 0,
        "last_hash": GENESIS,
        "pruned_rows": 0,
        "updated_at": utcnow(),
    }
    await session.execute(insert_ignoring_conflicts(session, AuditAnchorRow, values, ["tenant_id"]))
    seq = await session.scalar(
        select(AuditAnchorRow.seq).where(AuditAnchorRow.tenant_id == tenant_id).with_for_update()
    )
    return int(seq or 0)


async def delete_runs(session: AsyncSession, tenant_id: str, run_ids: list[str]) -> int:
    """Delete these runs of the tenant with their turns, gates and schedule ticks (in the
    caller's transaction); how many runs."""
    for model in (TurnRow, CheckpointRow, ScheduleTickRow):
        await session.execute(
            delete(model).where(model.tenant_id == tenant_id, model.run_id.in_(run_ids))
        )
    stmt = delete(RunRow).where(RunRow.tenant_id == tenant_id, RunRow.id.in_(run_ids))
    return rowcount(await session.execute(stmt))


async def delete_conversations(
    session: AsyncSession, tenant_id: str, ids: list[str]
) -> tuple[int, int]:
    """Delete these conversations of the tenant with their messages, summaries and turn
    bookkeeping (in the caller's transaction); how many (conversations, messages)."""
    for model in (SummaryRow, TurnRow, ConversationLockRow):
        await session.execute(
            delete(model).where(model.tenant_id == tenant_id, model.conversation_id.in_(ids))
        )
    messages = rowcount(
        await session.execute(
            delete(MessageRow).where(
                MessageRow.tenant_id == tenant_id, MessageRow.conversation_id.in_(ids)
            )
        )
    )
    stmt = delete(ConversationRow).where(
        ConversationRow.tenant_id == tenant_id, ConversationRow.id.in_(ids)
    )
    return rowcount(await session.execute(stmt)), messages
