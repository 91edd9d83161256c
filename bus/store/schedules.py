"""Scheduled questions: a question asked on a cron schedule, each tick by exactly one run.

A schedule belongs to the user who created it (another user's id is unknown to them; a
tenant admin may list and read the tenant's). Each tick is *claimed* in one transaction
that moves the schedule's ``next_run_at`` on, compare-and-set on its ``version``, and
inserts the tick's row, whose (schedule, tick) is unique: of any number of replicas
that find the same tick due, one claims it. The claimer then publishes the tick's run,
whose id is derived from (schedule, tick), with the publish-once path; a claim whose
publish was lost (the process died between the two) is found again by
`ScheduleStore.unpublished` and published again, a no-op if the first publish happened.
"""

from __future__ import annotations

import builtins
import hashlib
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, field_validator
from sqlalchemy import Table, and_, delete, insert, select, update

from bus.store.repository import Repository, insert_ignoring_conflicts, utcnow
from bus.store.schedule_tables import ScheduleRow, ScheduleTickRow
from bus.store.scope import Scope

_SCHEDULES: Table = ScheduleRow.__table__  # pyright: ignore[reportAssignmentType]
_TICKS: Table = ScheduleTickRow.__table__  # pyright: ignore[reportAssignmentType]

#: Schedules claimed per pass of a scheduler, and claims re-published per sweep.
BATCH = 100


class TickState(StrEnum):
    """What became of a claimed tick."""

    CLAIMED = "claimed"
    """Its run is being published (or the publisher died: the sweep publishes it)."""
    STARTED = "started"
    """Its run was published."""
    SKIPPED = "skipped"
    """It was missed while nothing ran, and the schedule's policy is ``skip``."""
    REFUSED = "refused"
    """Its run was refused (``error`` says why: the key was revoked, a limit, ...)."""


class ScheduleRecord(BaseModel):
    """A scheduled question as the store holds it."""

    model_config = ConfigDict(frozen=True, from_attributes=True)

    id: str
    tenant_id: str
    subject: str
    key_id: str | None
    groups: tuple[str, ...] = ()
    cron: str
    timezone: str
    question: str
    settings: dict[str, Any]
    webhook_url: str | None
    missed: str
    conversation_id: str
    paused: bool
    next_run_at: int
    version: int
    created_at: AwareDatetime
    updated_at: AwareDatetime

    @field_validator("created_at", "updated_at")
    @classmethod
    def _in_utc(cls, value: datetime) -> datetime:
        return value.astimezone(UTC)

    @property
    def owner(self) -> Scope:
        """The user the schedule's runs belong to."""
        return Scope.user(self.tenant_id, self.subject)


class TickRecord(BaseModel):
    """One claimed tick of a schedule."""

    model_config = ConfigDict(frozen=True, from_attributes=True)

    schedule_id: str
    tick_at: int
    tenant_id: str
    subject: str
    run_id: str | None
    state: TickState
    error: str | None
    created_at: AwareDatetime
    updated_at: AwareDatetime

    @field_validator("created_at", "updated_at")
    @classmethod
    def _in_utc(cls, value: datetime) -> datetime:
        return value.astimezone(UTC)

    @property
    def owner(self) -> Scope:
        """The user the tick's run belongs to."""
        return Scope.user(self.tenant_id, self.subject)

    def marked(self, state: TickState, error: str | None) -> TickRecord:
        """This tick with what became of it."""
        return self.model_copy(update={"state": state, "error": error})


def tick_run_id(schedule_id: str, tick_at: int) -> str:
    """The run id of a schedule's tick: the same for every replica and every retry."""
    return hashlib.sha256(f"schedule\n{schedule_id}\n{tick_at}".encode()).hexdigest()[:32]


class _Lost(Exception):
    """The claim lost a race: roll its transaction back."""


class ScheduleStore(Repository):
    """Creates, lists, pauses and deletes schedules, and claims their ticks."""

    async def create(self, record: ScheduleRecord) -> ScheduleRecord:
        """Store a new schedule (the caller made its id and first ``next_run_at``)."""
        values = record.model_dump()
        values["groups"] = list(record.groups)
        async with self._scoped(record.owner, "create the schedule") as session:
            await session.execute(insert(_SCHEDULES).values(values))
        return record

    async def get(self, scope: Scope, schedule_id: str) -> ScheduleRecord | None:
        """The schedule if ``scope`` sees it (another user's or tenant's: None)."""
        stmt = select(ScheduleRow).where(ScheduleRow.id == schedule_id, scope.where(ScheduleRow))
        async with self._scoped(scope, "read the schedule") as session:
            row = await session.scalar(stmt)
            return None if row is None else ScheduleRecord.model_validate(row)

    async def list(self, scope: Scope, limit: int = 100) -> builtins.list[ScheduleRecord]:
        """The schedules ``scope`` sees, the newest first."""
        if limit < 1:
            raise ValueError("limit must be at least 1")
        stmt = (
            select(ScheduleRow)
            .where(scope.where(ScheduleRow))
            .order_by(ScheduleRow.created_at.desc(), ScheduleRow.id)
            .limit(limit)
        )
        async with self._scoped(scope, "list the schedules") as session:
            return [ScheduleRecord.model_validate(r) for r in await session.scalars(stmt)]

    async def set_paused(
        self, owner: Scope, schedule_id: str, paused: bool, next_run_at: int
    ) -> ScheduleRecord | None:
        """Pause or resume the owner's schedule (``next_run_at``: its next tick when it
        resumes, so the paused time is not made up for); None if the owner has no such."""
        stmt = (
            update(ScheduleRow)
            .where(ScheduleRow.id == schedule_id, owner.where(ScheduleRow, owner=True))
            .values(
                paused=paused,
                next_run_at=next_run_at,
                version=ScheduleRow.version + 1,
                updated_at=utcnow(),
            )
            .returning(ScheduleRow.id)
            .execution_options(synchronize_session=False)
        )
        async with self._scoped(owner, "pause the schedule") as session:
            if (await session.execute(stmt)).scalar() is None:
                return None
        return await self.get(owner, schedule_id)

    async def delete(self, owner: Scope, schedule_id: str) -> bool:
        """Delete the owner's schedule and its ticks (its conversation stays); whether it
        had one."""
        async with self._scoped(owner, "delete the schedule") as session:
            gone = await session.execute(
                delete(ScheduleRow)
                .where(ScheduleRow.id == schedule_id, owner.where(ScheduleRow, owner=True))
                .returning(ScheduleRow.id)
                .execution_options(synchronize_session=False)
            )
            if gone.scalar() is None:
                return False
            await session.execute(
                delete(ScheduleTickRow)
                .where(
                    ScheduleTickRow.schedule_id == schedule_id,
                    owner.where(ScheduleTickRow, owner=True),
                )
                .execution_options(synchronize_session=False)
            )
        return True

    async def due(self, now: float) -> builtins.list[ScheduleRecord]:
        """For the scheduler: every tenant's running schedules whose next tick has come."""
        stmt = (
            select(ScheduleRow)
            .where(ScheduleRow.paused.is_(False), ScheduleRow.next_run_at <= int(now))
            .order_by(ScheduleRow.next_run_at)
            .limit(BATCH)
        )
        async with self._scoped(Scope.operator(), "read the due schedules") as session:
            return [ScheduleRecord.model_validate(r) for r in await session.scalars(stmt)]

    async def claim(
        self,
        schedule: ScheduleRecord,
        tick_at: int,
        next_run_at: int,
        state: TickState,
        at: float,
    ) -> TickRecord | None:
        """Claim the tick ``tick_at`` of ``schedule`` (as read by `due`) and move the
        schedule on to ``next_run_at``, in one transaction.

        Args:
            schedule: the schedule, as read (its ``version`` is compared and set).
            tick_at: the tick to record (its run id is `tick_run_id`).
            next_run_at: the schedule's next tick after this claim.
            state: ``claimed`` (the caller publishes its run now) or ``skipped``.
            at: when it is claimed (Unix seconds, the scheduler's clock): `unpublished`
                compares it.

        Returns:
            The tick, or None: another replica claimed it first, or the schedule was
            paused, resumed or deleted since it was read (nothing was written).
        """
        now = datetime.fromtimestamp(at, UTC)
        owner = schedule.owner
        run_id = tick_run_id(schedule.id, tick_at) if state == TickState.CLAIMED else None
        values: dict[str, Any] = {
            "schedule_id": schedule.id,
            "tick_at": tick_at,
            "tenant_id": schedule.tenant_id,
            "subject": schedule.subject,
            "run_id": run_id,
            "state": state.value,
            "error": None,
            "created_at": now,
            "updated_at": now,
        }
        move = (
            update(ScheduleRow)
            .where(
                ScheduleRow.id == schedule.id,
                ScheduleRow.version == schedule.version,
                ScheduleRow.paused.is_(False),
                owner.where(ScheduleRow, owner=True),
            )
            .values(next_run_at=next_run_at, version=ScheduleRow.version + 1, updated_at=now)
            .returning(ScheduleRow.id)
            .execution_options(synchronize_session=False)
        )
        try:
            async with self._scoped(owner, "claim the schedule's tick") as session:
                if (await session.execute(move)).scalar() is None:
                    return None
                record_tick = insert_ignoring_conflicts(
                    session, ScheduleTickRow, values, ["schedule_id", "tick_at"]
                ).returning(ScheduleTickRow.id)
                if (await session.execute(record_tick)).scalar() is None:
                    raise _Lost  # recorded before under another version: roll the move back
        except _Lost:
            return None
        return TickRecord.model_validate(values)

    async def mark(
        self, tick: TickRecord, state: TickState, error: str | None = None
    ) -> TickRecord:
        """Record what became of a claimed tick (``started`` or ``refused``)."""
        stmt = (
            update(ScheduleTickRow)
            .where(
                ScheduleTickRow.schedule_id == tick.schedule_id,
                ScheduleTickRow.tick_at == tick.tick_at,
                tick.owner.where(ScheduleTickRow, owner=True),
            )
            .values(state=state.value, error=error, updated_at=utcnow())
            .execution_options(synchronize_session=False)
        )
        async with self._scoped(tick.owner, "record the schedule's tick") as session:
            await session.execute(stmt)
        return tick.marked(state, error)

    async def unpublished(self, before: datetime) -> builtins.list[TickRecord]:
        """For the sweep: every tenant's ticks claimed before ``before`` and not yet
        recorded as started or refused (their claimer may have died before publishing)."""
        stmt = (
            select(ScheduleTickRow)
            .where(
                ScheduleTickRow.state == TickState.CLAIMED.value,
                ScheduleTickRow.created_at < before,
            )
            .order_by(ScheduleTickRow.id)
            .limit(BATCH)
        )
        async with self._scoped(Scope.operator(), "read the unpublished ticks") as session:
            return [TickRecord.model_validate(r) for r in await session.scalars(stmt)]

    async def ticks(
        self, scope: Scope, schedule_id: str, limit: int = 20
    ) -> builtins.list[TickRecord]:
        """The schedule's latest ticks that ``scope`` sees, the newest first."""
        stmt = (
            select(ScheduleTickRow)
            .where(and_(ScheduleTickRow.schedule_id == schedule_id, scope.where(ScheduleTickRow)))
            .order_by(ScheduleTickRow.tick_at.desc())
            .limit(limit)
        )
        async with self._scoped(scope, "read the schedule's ticks") as session:
            return [TickRecord.model_validate(r) for r in await session.scalars(stmt)]
