"""Scheduled questions, the use cases: add, list, read, pause, resume and delete.

A schedule belongs to the user who adds it and asks its question, as that user, in one
conversation of its own (created by its first run; deleting the schedule keeps it). Its
runs act with the API key that added it: they carry the key's ACL groups, and once the
key is revoked each tick is recorded as refused (``key_revoked``). Another user's
schedule is 404; a tenant admin may list and read the tenant's, and only the owner may
pause, resume or delete one (403 for the admin).

What a run start checks (the served models, CRITICAL tools, the webhook's host) is checked
here too, so a schedule that could never run is refused when it is added; every tick's
run start checks it again, under the tenant's settings of that moment.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from agentbus_contracts import ScheduledQuestion, ScheduledTick
from api.app.auth import Principal
from api.app.errors import (
    CriticalToolNotApproved,
    InvalidRequest,
    NotOwner,
    QuestionTooLarge,
    ScheduleNotFound,
)
from api.app.oversight import audit_read
from api.app.preferences import check_user_model, models_chosen
from api.app.schedule_times import BadSchedule, Missed, next_after
from api.app.webhook_requests import WebhookRequest, check_webhook
from bus.commands import new_run_id
from bus.run_state import QuestionSettings
from bus.store import AuditStore, ScheduleRecord, ScheduleStore, TickRecord

if TYPE_CHECKING:
    from api.app.starter import RunStarter


@dataclass(frozen=True, slots=True)
class NewSchedule:
    """A question to ask on a schedule."""

    cron: str
    timezone: str
    question: str
    settings: QuestionSettings = field(default_factory=QuestionSettings)
    webhook_url: str | None = None
    missed: Missed = "skip"


class ScheduleBook:
    """The schedules' use cases, for every transport (REST, the CLI).

    Args:
        store: the schedules.
        starter: the run starter, whose checks a new schedule passes (None: the CLI,
            which has no tenant settings at hand; each tick's start checks them).
        max_question_chars: the longest question accepted.
        webhook_private_hosts: hosts the deployment lets webhooks reach on private
            addresses (``AGENTBUS_WEBHOOK_PRIVATE_HOSTS``).
        clock: Unix seconds (tests pass a fake).
        audit: where an admin's reads of other users' schedules are recorded (None: no
            audit log; such a read is refused).
    """

    def __init__(
        self,
        store: ScheduleStore,
        starter: RunStarter | None,
        *,
        max_question_chars: int,
        webhook_private_hosts: frozenset[str] = frozenset(),
        clock: Callable[[], float] = time.time,
        audit: AuditStore | None = None,
    ) -> None:
        self.store = store
        self._starter = starter
        self._max_chars = max_question_chars
        self._private = webhook_private_hosts
        self._clock = clock
        self._audit = audit

    async def add(
        self, who: Principal, new: NewSchedule, *, bind_key: bool = True
    ) -> ScheduleRecord:
        """Check and store a new schedule of ``who``; its first tick is the next after now.

        Args:
            who: the owner.
            new: what to ask, and when.
            bind_key: act with ``who``'s API key (the CLI has none: its schedules act with
                ``who``'s groups).

        Raises:
            InvalidRequest: a bad cron expression, time zone or question (``field``).
            QuestionTooLarge: the question is over the deployment's limit.
            ModelNotAllowed, CriticalToolNotApproved, WebhookRefused: the settings or the
                webhook would be refused at every tick.
        """
        question = self._check_question(new.question)
        try:
            first = next_after(new.cron, new.timezone, self._clock())
        except BadSchedule as e:
            raise InvalidRequest(str(e), field=e.field) from e
        webhook = await self._check_run(who, new)
        now = datetime.fromtimestamp(self._clock(), UTC)
        record = ScheduleRecord(
            id=new_run_id(),
            tenant_id=who.tenant_id,
            subject=who.subject,
            key_id=who.key_id if bind_key else None,
            groups=who.groups,
            cron=" ".join(new.cron.split()),
            timezone=new.timezone,
            question=question,
            settings=new.settings.model_dump(mode="json", exclude_defaults=True),
            webhook_url=webhook,
            missed=new.missed,
            conversation_id=new_run_id(),
            paused=False,
            next_run_at=first,
            version=0,
            created_at=now,
            updated_at=now,
        )
        return await self.store.create(record)

    def _check_question(self, question: str) -> str:
        if len(question) > self._max_chars:
            raise QuestionTooLarge(
                f"the question has {len(question)} characters; the limit is {self._max_chars}",
                field="question",
            )
        if not question.strip():
            raise InvalidRequest("the question is empty", field="question")
        return question

    async def _check_run(self, who: Principal, new: NewSchedule) -> str | None:
        """What a run start would refuse for every tick; the webhook URL, normalised."""
        if self._starter is None:
            return new.webhook_url
        effective = await self._starter.effective(who.tenant_id)
        self._starter.check_models(models_chosen(effective, new.settings))
        check_user_model(effective, new.settings.model, is_admin=who.is_admin)
        missing = sorted(
            set(new.settings.approve_critical) - set(effective.approved_critical_tools)
        )
        if missing:
            raise CriticalToolNotApproved(
                f"tenant {who.tenant_id!r} has not approved the CRITICAL tool(s) "
                f"{', '.join(missing)}",
                field="settings.approve_critical",
            )
        if new.webhook_url is None:
            return None
        return check_webhook(effective, WebhookRequest(new.webhook_url), self._private).url

    async def list(self, who: Principal, limit: int = 100) -> builtins.list[ScheduleRecord]:
        """The caller's schedules; an admin's, the tenant's (audited)."""
        found = await self.store.list(who.scope, limit)
        others = [s.id for s in found if s.subject != who.subject]
        await audit_read(
            self._audit, who, what="list_schedules", owners=(s.subject for s in found), ids=others
        )
        return found

    async def get(
        self, who: Principal, schedule_id: str, ticks: int = 20
    ) -> tuple[ScheduleRecord, builtins.list[TickRecord]]:
        """One schedule the caller sees, with its latest ticks (``ScheduleNotFound``); an
        admin's read of another user's is audited."""
        found = await self.store.get(who.scope, schedule_id)
        if found is None:
            raise ScheduleNotFound(f"no schedule {schedule_id[:80]!r}")
        recent = await self.store.ticks(who.scope, schedule_id, ticks)
        await audit_read(
            self._audit, who, what="read_schedule", owners=[found.subject], target=schedule_id
        )
        return found, recent

    async def pause(self, who: Principal, schedule_id: str, paused: bool) -> ScheduleRecord:
        """Pause or resume one of the caller's schedules. A resumed schedule's next tick is
        the next after now: the ticks of the paused time do not run."""
        found = await self._owned(who, schedule_id)
        try:
            after = next_after(found.cron, found.timezone, self._clock())
        except BadSchedule as e:  # the zone left the system's database since it was added
            raise InvalidRequest(str(e), field=e.field) from e
        changed = await self.store.set_paused(who.scope, schedule_id, paused, after)
        if changed is None:  # deleted meanwhile
            raise ScheduleNotFound(f"no schedule {schedule_id[:80]!r}")
        return changed

    async def delete(self, who: Principal, schedule_id: str) -> None:
        """Delete one of the caller's schedules (its conversation stays)."""
        await self._owned(who, schedule_id)
        if not await self.store.delete(who.scope, schedule_id):
            raise ScheduleNotFound(f"no schedule {schedule_id[:80]!r}")

    async def _owned(self, who: Principal, schedule_id: str) -> ScheduleRecord:
        found = await self.store.get(who.scope, schedule_id)
        if found is None:
            raise ScheduleNotFound(f"no schedule {schedule_id[:80]!r}")
        if found.subject != who.subject:
            raise NotOwner(f"schedule {schedule_id[:80]!r} belongs to another user")
        return found


def view_of(record: ScheduleRecord) -> ScheduledQuestion:
    """A stored schedule as the API shows it."""
    return ScheduledQuestion(
        id=record.id,
        tenant_id=record.tenant_id,
        subject=record.subject,
        cron=record.cron,
        timezone=record.timezone,
        question=record.question,
        settings=record.settings,
        webhook_url=record.webhook_url,
        missed="run_once" if record.missed == "run_once" else "skip",
        conversation_id=record.conversation_id,
        paused=record.paused,
        next_run_at=datetime.fromtimestamp(record.next_run_at, UTC),
        created_at=record.created_at,
    )


def tick_of(record: TickRecord) -> ScheduledTick:
    """A schedule's tick as the API shows it."""
    return ScheduledTick.model_validate(
        {
            "tick_at": datetime.fromtimestamp(record.tick_at, UTC),
            "run_id": record.run_id,
            "state": record.state.value,
            "error": record.error,
        }
    )
