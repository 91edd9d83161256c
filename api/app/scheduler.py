"""The scheduler: each due tick of every schedule starts exactly one run.

Every API replica (and so ``agentbus up``) runs one. A pass reads the schedules whose next
tick has come, decides what each does (`api.app.schedule_times.plan`: run it, or skip a
missed one), and claims the tick in SQL (`bus.store.ScheduleStore.claim`): of the
replicas that find a tick due, one claims it. The claimer starts the tick's run through
the run starter, as the schedule's owner, with the run id and an idempotency key derived
from (schedule, tick), into the schedule's conversation and onto its webhook.

A claimer that dies between the claim and the start (a SIGKILL, a lost connection) leaves
the tick ``claimed``; every pass also sweeps ticks claimed more than
``UNPUBLISHED_GRACE_S`` ago and starts them again: the same run id and key make a second
start of a run that did start a no-op, so the tick still has exactly one run. A start the
tenant's limits or settings refuse is recorded (``refused``, with the error's code) and
not retried; the next tick runs as usual. Redis or the store being down leaves the claim
for the sweep.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import structlog

from api.app.ask import Ask
from api.app.auth import Principal
from api.app.errors import ApiError, InvalidRequest, Unavailable
from api.app.schedule_times import BadSchedule, Missed, plan
from api.app.webhook_requests import webhook_of
from bus.errors import StoreError
from bus.run_state import QuestionSettings
from bus.store import KeyRole, ScheduleRecord, TickRecord, TickState

if TYPE_CHECKING:
    from api.app.starter import RunStarter
    from bus.store import ApiKeyStore, ScheduleStore

log = structlog.get_logger("api.scheduler")

#: How long a claimed tick may wait for its run to start before a sweep starts it again.
UNPUBLISHED_GRACE_S = 30.0

#: The code a tick is refused with when the key its schedule acts with was revoked.
KEY_REVOKED = "key_revoked"


class Scheduler:
    """Claims due ticks and starts their runs.

    Args:
        store: the schedules.
        starter: starts runs (limits, settings, publish once).
        keys: the API keys schedules act with.
        misfire_grace_s: how late a tick may start before it counts as missed.
        clock: Unix seconds (tests pass a fake).
    """

    def __init__(
        self,
        store: ScheduleStore,
        starter: RunStarter,
        keys: ApiKeyStore,
        *,
        misfire_grace_s: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._starter = starter
        self._keys = keys
        self._grace = misfire_grace_s
        self._clock = clock

    async def run_due(self) -> list[TickRecord]:
        """Claim every due tick this pass finds (other replicas' claims are skipped) and
        start the runs of those claimed; the ticks this replica claimed."""
        now = self._clock()
        claimed: list[TickRecord] = []
        for schedule in await self._store.due(now):
            try:
                tick = await self._claim(schedule, now)
                if tick is not None and tick.state == TickState.CLAIMED:
                    tick = await self.start(schedule, tick)
            except Exception as e:  # one schedule's failure holds up no other's
                log.warning("schedule tick failed", schedule_id=schedule.id, error=repr(e))
                continue
            if tick is not None:
                claimed.append(tick)
        return claimed

    async def _claim(self, schedule: ScheduleRecord, now: float) -> TickRecord | None:
        missed: Missed = "run_once" if schedule.missed == "run_once" else "skip"
        try:
            todo = plan(
                schedule.cron, schedule.timezone, schedule.next_run_at, now, missed, self._grace
            )
        except BadSchedule as e:  # its zone left the system's tz database: leave it be
            log.warning("schedule unusable", schedule_id=schedule.id, error=str(e))
            return None
        state = TickState.CLAIMED if todo.run else TickState.SKIPPED
        tick = await self._store.claim(schedule, todo.tick_at, todo.next_run_at, state, now)
        if tick is not None and todo.missed:
            log.info(
                "schedule missed ticks",
                schedule_id=schedule.id,
                tick_at=todo.tick_at,
                ran=todo.run,
            )
        return tick

    async def sweep(self) -> list[TickRecord]:
        """Start again every tick claimed long enough ago whose run may not have started."""
        before = datetime.fromtimestamp(self._clock() - UNPUBLISHED_GRACE_S, UTC)
        done: list[TickRecord] = []
        for tick in await self._store.unpublished(before):
            try:
                schedule = await self._store.get(tick.owner, tick.schedule_id)
                if schedule is not None:
                    done.append(await self.start(schedule, tick))
            except Exception as e:  # retried at the next pass; the others go on
                log.warning("schedule sweep failed", schedule_id=tick.schedule_id, error=repr(e))
        return done

    async def start(self, schedule: ScheduleRecord, tick: TickRecord) -> TickRecord:
        """Start the tick's run (again: a no-op if it started) and record the outcome."""
        who = await self._principal(schedule)
        if who is None:
            log.warning("schedule's key revoked", schedule_id=schedule.id)
            return await self._store.mark(tick, TickState.REFUSED, KEY_REVOKED)
        try:
            settings = QuestionSettings.model_validate(schedule.settings)
        except ValueError:  # stored by an older version that accepted it
            return await self._store.mark(tick, TickState.REFUSED, InvalidRequest.code)
        ask = Ask(
            schedule.question,
            schedule.conversation_id,
            settings,
            run_id=tick.run_id,
            webhook=webhook_of(schedule.webhook_url, False),
            priority="batch",
        )
        idem = f"schedule:{schedule.id}:{tick.tick_at}"
        try:
            await self._starter.start(who, ask, idempotency_key=idem)
        except (Unavailable, StoreError) as e:  # the sweep starts it again (Redis down: the
            # starter raises Unavailable)
            log.warning("scheduled run not started", schedule_id=schedule.id, error=str(e))
            return tick
        except ApiError as e:
            log.info("scheduled run refused", schedule_id=schedule.id, code=e.code)
            return await self._store.mark(tick, TickState.REFUSED, e.code)
        log.info("scheduled run started", schedule_id=schedule.id, run_id=tick.run_id)
        return await self._store.mark(tick, TickState.STARTED)

    async def _principal(self, schedule: ScheduleRecord) -> Principal | None:
        """Who the schedule's runs act as: its key's holder, None once the key is revoked."""
        if schedule.key_id is None:
            return Principal(
                schedule.tenant_id, schedule.subject, KeyRole.USER, "", schedule.groups
            )
        record = await self._keys.get(schedule.key_id)
        if (
            record is None
            or not record.active
            or (record.tenant_id, record.subject) != (schedule.tenant_id, schedule.subject)
        ):
            return None
        return Principal(record.tenant_id, record.subject, record.role, record.id, record.groups)

    async def run_forever(self, interval_s: float) -> None:
        """Sweep, then start what is due, every ``interval_s`` (every API replica runs
        this; the claims keep each tick to one run)."""
        while True:
            try:
                await self.sweep()
                await self.run_due()
            except (StoreError, ApiError, OSError) as e:  # the loop outlives any one failure
                log.warning("scheduler pass failed", error=repr(e))
            except Exception as e:
                log.exception("scheduler pass failed", error=repr(e))
            await asyncio.sleep(interval_s)
