"""Erasing one user of a tenant from the SQL store: what they own, deleted in batches.

Deletes run in the user's own scope (`Scope.user`), so on Postgres row-level security
lets them reach that user's rows and no one else's, whatever a WHERE clause says.
The audit log is not deleted from: the rows about the user keep their place in the
chain and lose their content (``redacted_at`` set), each batch appending, in the same
transaction, a redaction record that vouches for what it blanked (see
`bus.store.audit_redaction`); the caller appends a tombstone row saying what was erased.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bus.events import RunStatus
from bus.store.audit import API_AGENT, AuditEntry, append_in
from bus.store.audit_chain import AuditLogRecord
from bus.store.audit_redaction import (
    ERASED,
    ERASURE_AGENT,
    MARKER,
    MAX_ROWS_PER_RECORD,
    REDACT_TOOL,
    RedactedRow,
    redacted_row,
    redaction_args,
)
from bus.store.document_tables import DocumentRow
from bus.store.documents import DocumentRecord
from bus.store.gate_tables import CheckpointRow
from bus.store.memory_tables import MemoryRow
from bus.store.repository import Repository, utcnow
from bus.store.retention import delete_conversations, delete_runs, rowcount
from bus.store.schedule_tables import ScheduleRow, ScheduleTickRow
from bus.store.scope import Scope
from bus.store.tables import (
    ApiKeyRow,
    AuditHeadRow,
    AuditRow,
    ConversationRow,
    RunRow,
    TenantSettingsRow,
)
from bus.store.team_tables import TeamRow
from bus.store.webhook_secrets import WebhookSecretRow

_IN_FLIGHT = (RunStatus.QUEUED.value, RunStatus.RUNNING.value)


class Holdings(BaseModel):
    """What the store holds of one user, found before anything is erased.

    Attributes:
        run_ids: every run of theirs (the Redis side forgets these).
        in_flight: their runs queued or running (erasure waits for these to end).
        documents: the documents they uploaded (their ingest jobs are runs of sorts: the
            Redis side forgets those too).
    """

    model_config = ConfigDict(frozen=True)

    run_ids: list[str]
    in_flight: list[str]
    documents: list[DocumentRecord]


class ErasureId(BaseModel):
    """Which erasure redacts: its id (its tombstone's ``call_id``) and who asked for it.

    Attributes:
        id: the erasure's id.
        by: an admin's id, or ``self``.
    """

    model_config = ConfigDict(frozen=True)

    id: str = Field(min_length=1, max_length=255)
    by: str = Field(min_length=1, max_length=255)


def _redaction_record(
    tenant_id: str, erasure: ErasureId, at: datetime, rows: list[RedactedRow]
) -> AuditEntry:
    """The audit row that vouches for one batch of redactions."""
    return AuditEntry(
        tenant_id=tenant_id,
        subject=ERASED if erasure.by == "self" else erasure.by,
        run_id="",
        agent=ERASURE_AGENT,
        call_id=erasure.id,
        tool=REDACT_TOOL,
        args=redaction_args(erasure.id, erasure.by, at, rows),
        status="ok",
        code="audit_rows_redacted",
        message=f"{len(rows)} audit row(s) about an erased user were redacted",
        duration_ms=0.0,
    )


class ErasureStore(Repository):
    """Finds and erases one user's rows; each batch is one short transaction."""

    async def holdings(self, tenant_id: str, subject: str) -> Holdings:
        """The user's runs (and which are in flight) and uploaded documents."""
        async with self._scoped(Scope.user(tenant_id, subject), "find the user's data") as s:
            runs = (
                await s.execute(
                    select(RunRow.id, RunRow.status).where(
                        RunRow.tenant_id == tenant_id, RunRow.subject == subject
                    )
                )
            ).all()
            docs = await s.scalars(
                select(DocumentRow).where(
                    DocumentRow.tenant_id == tenant_id, DocumentRow.uploaded_by == subject
                )
            )
            documents = [DocumentRecord.model_validate(d) for d in docs]
        return Holdings(
            run_ids=[str(r.id) for r in runs],
            in_flight=[str(r.id) for r in runs if r.status in _IN_FLIGHT],
            documents=documents,
        )

    async def subjects(self) -> set[tuple[str, str]]:
        """Every (tenant, user) the store holds data of, read as the operator: what a
        replayed erasure (`api.app.erasure_replay`) matches its ledger's marks against."""
        columns = [
            (ApiKeyRow.tenant_id, ApiKeyRow.subject),
            (RunRow.tenant_id, RunRow.subject),
            (ConversationRow.tenant_id, ConversationRow.subject),
            (MemoryRow.tenant_id, MemoryRow.subject),
            (ScheduleRow.tenant_id, ScheduleRow.subject),
            (CheckpointRow.tenant_id, CheckpointRow.subject),
            (DocumentRow.tenant_id, DocumentRow.uploaded_by),
        ]
        found: set[tuple[str, str]] = set()
        async with self._scoped(Scope.operator(), "list the store's users") as session:
            for tenant, subject in columns:
                rows = await session.execute(select(tenant, subject).distinct())
                found |= {(str(t), str(s)) for t, s in rows.tuples()}
        return found

    async def erase(self, tenant_id: str, subject: str, batch: int) -> dict[str, int]:
        """Delete the user's schedules, conversations, runs, gates and document catalogue
        rows (their keys: `erase_keys`), and blank their name where the tenant's
        bookkeeping recorded it.

        Returns:
            How many of each kind were deleted.
        """
        owner = Scope.user(tenant_id, subject)
        counts: dict[str, int] = {}

        async def each(kind: str, step: Callable[[AsyncSession], Awaitable[int]]) -> None:
            total = 0
            while True:
                async with self._scoped(owner, f"erase the user's {kind}") as session:
                    done: int = await step(session)
                if not done:
                    break
                total += done
            counts[kind] = total

        await each("schedules", lambda s: self._schedules(s, tenant_id, subject, batch))
        await each(
            "conversations", lambda s: self._conversations(s, tenant_id, subject, batch, counts)
        )
        await each("runs", lambda s: _runs(s, tenant_id, subject, batch))
        gates = (CheckpointRow.tenant_id == tenant_id, CheckpointRow.subject == subject)
        await each(
            "checkpoints", lambda s: _delete_some(s, CheckpointRow, CheckpointRow.id, gates, batch)
        )
        docs = (DocumentRow.tenant_id == tenant_id, DocumentRow.uploaded_by == subject)
        await each(
            "documents", lambda s: _delete_some(s, DocumentRow, DocumentRow.doc_id, docs, batch)
        )
        async with self._scoped(Scope.tenant(tenant_id), "erase the user's name") as session:
            await _forget_name(session, tenant_id, subject)
        counts.setdefault("messages", 0)
        return counts

    async def erase_keys(self, tenant_id: str, subject: str, batch: int) -> int:
        """Delete the user's API keys (no new run of theirs can start); how many."""
        mine = (ApiKeyRow.tenant_id == tenant_id, ApiKeyRow.subject == subject)
        total = 0
        while True:
            async with self._scoped(Scope.user(tenant_id, subject), "erase the keys") as s:
                done = await _delete_some(s, ApiKeyRow, ApiKeyRow.id, mine, batch)
            if not done:
                return total
            total += done

    async def redact_audit(
        self, tenant_id: str, subject: str, run_ids: list[str], batch: int, erasure: ErasureId
    ) -> int:
        """Blank the content of the audit rows about the user (theirs, their runs', and
        admins' reads of their data), in batches; how many rows were redacted.

        The rows keep their seq, ``prev_hash`` and ``row_hash``: the chain still links.
        Each batch appends a redaction record in its transaction, so a blanked row is never
        without the record `AuditStore.verify` checks it against.
        The scope is the tenant's: a row about to read ``[erased]`` is no longer the user's.
        The rows erasures wrote (tombstones, redaction records) stay whole: they name no one
        but the admin who erased, and they are the record that the others were erased.
        """
        named = json.dumps(subject, ensure_ascii=False)
        about = [
            (AuditRow.subject == subject) & (AuditRow.agent != ERASURE_AGENT),
            (AuditRow.agent == API_AGENT) & AuditRow.args.contains(named, autoescape=True),
            # Chunks: a long list of ids is more bound parameters than a driver takes.
            *(AuditRow.run_id.in_(run_ids[i : i + batch]) for i in range(0, len(run_ids), batch)),
        ]
        per = min(batch, MAX_ROWS_PER_RECORD)
        total = 0
        for rows_about in about:
            while done := await self._redact_some(tenant_id, subject, rows_about, per, erasure):
                total += done
        return total

    async def _redact_some(
        self, tenant_id: str, subject: str, about: Any, batch: int, erasure: ErasureId
    ) -> int:
        """Redact up to ``batch`` rows matching ``about`` and record it; how many."""
        async with self._scoped(Scope.tenant(tenant_id), "redact the audit log") as session:
            # First statement a write: it locks the chain's head (on SQLite the database's
            # write lock) before the rows are read, as `append_in` does.
            head = update(AuditHeadRow).where(AuditHeadRow.tenant_id == tenant_id)
            await session.execute(head.values(seq=AuditHeadRow.seq))
            found = await session.scalars(
                select(AuditRow)
                .where(AuditRow.tenant_id == tenant_id, AuditRow.redacted_at.is_(None), about)
                .order_by(AuditRow.seq)
                .limit(batch)
            )
            records = [AuditLogRecord.model_validate(r) for r in found]
            if not records:
                return 0
            at = utcnow()
            rows = AuditRow.tenant_id == tenant_id, AuditRow.id.in_([r.id for r in records])
            await session.execute(
                update(AuditRow).where(*rows, AuditRow.subject == subject).values(subject=ERASED)
            )
            blank = dict(MARKER) | {"record_key": None, "redacted_at": at}
            await session.execute(update(AuditRow).where(*rows).values(**blank))
            vouched = [redacted_row(r, subject, at) for r in records]
            await append_in(session, _redaction_record(tenant_id, erasure, at, vouched))
            return len(records)

    async def _schedules(
        self, session: AsyncSession, tenant_id: str, subject: str, batch: int
    ) -> int:
        ids = list(
            await session.scalars(
                select(ScheduleRow.id)
                .where(ScheduleRow.tenant_id == tenant_id, ScheduleRow.subject == subject)
                .limit(batch)
            )
        )
        if not ids:
            return 0
        await session.execute(
            delete(ScheduleTickRow).where(
                ScheduleTickRow.tenant_id == tenant_id, ScheduleTickRow.schedule_id.in_(ids)
            )
        )
        stmt = delete(ScheduleRow).where(
            ScheduleRow.tenant_id == tenant_id, ScheduleRow.id.in_(ids)
        )
        return rowcount(await session.execute(stmt))

    async def _conversations(
        self,
        session: AsyncSession,
        tenant_id: str,
        subject: str,
        batch: int,
        counts: dict[str, int],
    ) -> int:
        ids = [
            str(i)
            for i in await session.scalars(
                select(ConversationRow.id)
                .where(ConversationRow.tenant_id == tenant_id, ConversationRow.subject == subject)
                .limit(batch)
            )
        ]
        if not ids:
            return 0
        conversations, messages = await delete_conversations(session, tenant_id, ids)
        counts["messages"] = counts.get("messages", 0) + messages
        return conversations


async def _runs(session: AsyncSession, tenant_id: str, subject: str, batch: int) -> int:
    """Delete up to ``batch`` of the user's runs with their turns, gates and ticks."""
    ids = list(
        await session.scalars(
            select(RunRow.id)
            .where(RunRow.tenant_id == tenant_id, RunRow.subject == subject)
            .limit(batch)
        )
    )
    return await delete_runs(session, tenant_id, ids) if ids else 0


async def _delete_some(
    session: AsyncSession, model: Any, key: Any, where: tuple[Any, ...], batch: int
) -> int:
    """Delete up to ``batch`` rows of ``model`` matching ``where``; how many."""
    ids = list(await session.scalars(select(key).where(*where).limit(batch)))
    if not ids:
        return 0
    return rowcount(await session.execute(delete(model).where(*where, key.in_(ids))))


async def _forget_name(session: AsyncSession, tenant_id: str, subject: str) -> None:
    """The tenant's own rows that recorded the user as who changed them say ``[erased]``."""
    await session.execute(
        update(TenantSettingsRow)
        .where(TenantSettingsRow.tenant_id == tenant_id, TenantSettingsRow.updated_by == subject)
        .values(updated_by=ERASED)
    )
    await session.execute(
        update(WebhookSecretRow)
        .where(WebhookSecretRow.tenant_id == tenant_id, WebhookSecretRow.created_by == subject)
        .values(created_by=ERASED)
    )
    await session.execute(
        update(TeamRow)
        .where(TeamRow.tenant_id == tenant_id, TeamRow.created_by == subject)
        .values(created_by=ERASED)
    )
