"""The checkpoints repository: runs paused at a gate, resumed at most once, by their owner.

A run that stops at a gate writes a checkpoint; a resume claims it. Every statement runs
under the caller's `Scope`: in the WHERE clause on every backend and, on Postgres, also by
row-level security (each transaction first sets the scope; see `bus.store.scope`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Self

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator, model_validator
from sqlalchemy import select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.dml import Insert

from bus.errors import StoreError
from bus.run_state import RUN_STATE_VERSION
from bus.store.gate_tables import CheckpointRow
from bus.store.repository import Repository, utcnow
from bus.store.scope import Scope

__all__ = [
    "CheckpointRecord",
    "CheckpointStore",
    "GateAlreadyOpen",
    "GateConflict",
    "GateError",
    "GateExpired",
    "GateForbidden",
    "GateNotFound",
    "GateReason",
]

DECISION_MAX_CHARS = 32


class GateError(StoreError):
    """A gate could not be created or resumed; the subclasses say why."""

    code = "gate_error"
    hint = ""


class GateAlreadyOpen(GateError):
    """The run already waits at a gate; it cannot pause at a second one."""

    code = "gate_already_open"
    hint = "resume the open gate first (a run waits at one gate at a time)"


class GateNotFound(GateError):
    """No paused run with this id for the caller (it may be another user's or tenant's)."""

    code = "gate_not_found"
    hint = "check the run id; only the user who started a run can resume it"


class GateForbidden(GateError):
    """The caller sees the gate (a tenant admin) but it belongs to another user."""

    code = "gate_forbidden"
    hint = "only the user who started the run can resume it"


class GateConflict(GateError):
    """The run has no open gate: it was already resumed (a resume counts once)."""

    code = "gate_conflict"
    hint = "the gate was already decided; join the run to follow it"


class GateExpired(GateError):
    """The open gate's time to decide has passed; it is left as it is."""

    code = "gate_expired"
    hint = "the run waited too long for a decision; ask the question again"


class GateReason(StrEnum):
    """Why a run paused."""

    APPROVE_ANSWER = "approve_answer"
    EGRESS_APPROVAL = "egress_approval"
    CLIENT_TOOL = "client_tool"


class CheckpointRecord(BaseModel):
    """A paused run as the store holds it; immutable, detached from any database session."""

    model_config = ConfigDict(frozen=True, from_attributes=True)

    id: str = Field(min_length=1, max_length=64)
    run_id: str = Field(min_length=1, max_length=64)
    tenant_id: str = Field(min_length=1, max_length=64)
    subject: str = Field(max_length=255)
    reason: GateReason
    # The step the run paused at; the continuation starts from here.
    step: int = Field(ge=0)
    # Whatever the run needs to continue (messages, tool results so far, ...).
    state: dict[str, Any]
    state_version: int | None = Field(
        default=RUN_STATE_VERSION,
        ge=1,
        description="The version of `state` (None: a row 0.2.0 wrote, version 2).",
    )
    blocked_host: str | None = Field(default=None, min_length=1, max_length=255)
    tool: str | None = Field(default=None, min_length=1, max_length=255)
    # The blocked call's arguments, already redacted by the caller.
    args: dict[str, Any] | None = None
    created_at: AwareDatetime = Field(default_factory=utcnow)
    expires_at: AwareDatetime
    resumed_at: AwareDatetime | None = None
    decision: str | None = Field(default=None, min_length=1, max_length=DECISION_MAX_CHARS)

    @field_validator("created_at", "expires_at", "resumed_at")
    @classmethod
    def _in_utc(cls, value: datetime | None) -> datetime | None:
        # One zone everywhere, so records compare and serialise the same on every backend.
        return None if value is None else value.astimezone(UTC)

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.expires_at <= self.created_at:
            raise ValueError("expires_at must be later than created_at")
        if (self.resumed_at is None) != (self.decision is None):
            raise ValueError("resumed_at and decision are set together, or neither")
        if self.reason is GateReason.EGRESS_APPROVAL and (
            self.blocked_host is None or self.tool is None
        ):
            # A resume takes the host from the checkpoint, never from the client.
            raise ValueError("an egress_approval gate needs blocked_host and tool")
        return self

    @property
    def is_open(self) -> bool:
        """Whether the gate still waits for a decision."""
        return self.resumed_at is None

    def is_expired(self, now: datetime | None = None) -> bool:
        """Whether the time to decide has passed at ``now`` (default: the current time)."""
        return self.expires_at <= (now or utcnow())


def _insert_unless_taken(session: AsyncSession, values: dict[str, Any]) -> Insert:
    # ON CONFLICT DO NOTHING without a target covers the primary key and the partial unique
    # index alike, and leaves the transaction usable (an IntegrityError would abort it on
    # Postgres), so the caller can tell the two conflicts apart afterwards.
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        return postgresql.insert(CheckpointRow).values(values).on_conflict_do_nothing()
    if dialect == "sqlite":
        return sqlite.insert(CheckpointRow).values(values).on_conflict_do_nothing()
    raise StoreError(f"unsupported database {dialect!r}")


class CheckpointStore(Repository):
    """Writes, finds and resumes the checkpoints of paused runs.

    A checkpoint belongs to the user who started its run: a tenant admin may read it, only
    that user may resume it, and to anyone else it does not exist.

    Args:
        db: an engine (the store makes its own session factory) or a session factory. The
            caller owns the engine and disposes of it.
    """

    async def create(self, record: CheckpointRecord) -> CheckpointRecord:
        """Pause a run: insert its checkpoint.

        Raises:
            GateAlreadyOpen: the run already has an open checkpoint.
            StoreError: the checkpoint id is taken, or the database failed.
        """
        values = record.model_dump() | {"reason": record.reason.value}
        owner = Scope.user(record.tenant_id, record.subject)
        async with self._scoped(owner, "pause the run") as session:
            stmt = _insert_unless_taken(session, values).returning(CheckpointRow.id)
            if await session.scalar(stmt) is not None:
                return record
            if await self._open_row(session, owner, record.run_id) is not None:
                raise GateAlreadyOpen(f"run {record.run_id!r} already waits at a gate")
            raise StoreError(
                f"checkpoint {record.id!r} already exists",
                hint="gate ids must be unique; generate them with uuid4().hex",
            )

    async def open_for(self, scope: Scope, run_id: str) -> CheckpointRecord | None:
        """The run's open checkpoint if ``scope`` sees it, else None."""
        async with self._scoped(scope, "read the paused run") as session:
            row = await self._open_row(session, scope, run_id)
            return None if row is None else CheckpointRecord.model_validate(row)

    async def claim(
        self,
        scope: Scope,
        run_id: str,
        decision: str,
        now: datetime | None = None,
    ) -> CheckpointRecord:
        """Resume a paused run: mark its open checkpoint decided, exactly once.

        The check and the mark are one ``UPDATE ... WHERE resumed_at IS NULL``, so of two
        concurrent resumes of the same gate only one succeeds; the other gets
        ``GateConflict``. A refused claim changes nothing.

        Args:
            scope: the caller; it must own the run. Another user's or tenant's run is not
                found, unless the scope sees it (an admin), which is forbidden.
            run_id: the paused run.
            decision: the decision verb, stored as given (the caller validates it).
            now: the time of the resume (default: the current time); aware.

        Returns:
            The checkpoint as stored afterwards, with ``resumed_at`` and ``decision`` set.

        Raises:
            GateNotFound: the scope sees no checkpoint for this run (unknown or foreign run).
            GateForbidden: the scope sees the run (an admin) but another user owns it.
            GateConflict: the run has no open gate (it was already resumed).
            GateExpired: the open gate expired at or before ``now``.
            ValueError: ``decision`` is empty or too long, or ``now`` is naive.
            StoreError: the database failed.
        """
        if not 0 < len(decision) <= DECISION_MAX_CHARS:
            raise ValueError(f"decision must be 1 to {DECISION_MAX_CHARS} characters")
        if now is None:
            now = utcnow()
        elif now.utcoffset() is None:
            raise ValueError(f"naive datetime {now!r}: pass a timezone-aware datetime")
        stmt = (
            update(CheckpointRow)
            .where(
                scope.where(CheckpointRow, owner=True),
                CheckpointRow.run_id == run_id,
                CheckpointRow.resumed_at.is_(None),
                CheckpointRow.expires_at > now,
            )
            .values(resumed_at=now, decision=decision)
            .returning(CheckpointRow)
            .execution_options(synchronize_session=False)
        )
        async with self._scoped(scope, "resume the run") as session:
            row = await session.scalar(stmt)
            if row is not None:
                return CheckpointRecord.model_validate(row)
            raise await self._refusal(session, scope, run_id, now)

    async def history(self, scope: Scope, run_id: str) -> list[CheckpointRecord]:
        """Every checkpoint of the run ``scope`` sees, oldest first (empty for another's)."""
        stmt = (
            select(CheckpointRow)
            .where(scope.where(CheckpointRow), CheckpointRow.run_id == run_id)
            .order_by(CheckpointRow.created_at, CheckpointRow.id)
        )
        async with self._scoped(scope, "read the run's gates") as session:
            return [CheckpointRecord.model_validate(row) for row in await session.scalars(stmt)]

    @staticmethod
    async def _open_row(session: AsyncSession, scope: Scope, run_id: str) -> CheckpointRow | None:
        return await session.scalar(
            select(CheckpointRow).where(
                scope.where(CheckpointRow),
                CheckpointRow.run_id == run_id,
                CheckpointRow.resumed_at.is_(None),
            )
        )

    @staticmethod
    async def _refusal(
        session: AsyncSession, scope: Scope, run_id: str, now: datetime
    ) -> GateError:
        """Why a claim's UPDATE matched nothing, as the error to raise."""
        rows: Sequence[CheckpointRow] = (
            await session.scalars(
                select(CheckpointRow)
                .where(scope.where(CheckpointRow), CheckpointRow.run_id == run_id)
                .order_by(CheckpointRow.created_at.desc(), CheckpointRow.id.desc())
            )
        ).all()
        if not rows:
            # The same words whether the run is unknown or another's: nothing leaks.
            return GateNotFound(f"run {run_id!r} is not paused at a gate")
        # The open gate if there is one, else the latest: a run has one subject anyway.
        gate = next((row for row in rows if row.resumed_at is None), rows[0])
        if not scope.owns(gate.subject):
            return GateForbidden(f"run {run_id!r} belongs to another user")
        if gate.resumed_at is not None:
            return GateConflict(f"the gate of run {run_id!r} was already resumed")
        if gate.expires_at <= now:
            return GateExpired(f"the gate of run {run_id!r} expired at {gate.expires_at}")
        # Open, same subject, not expired, yet not updated: it changed in between.
        return GateConflict(f"the gate of run {run_id!r} changed while it was being resumed")
