"""When a schedule's ticks fall: cron expressions in a time zone, and the missed-tick policy.

Cron expressions have the five standard fields (minute, hour, day of month, month, day of
week; names such as ``MON`` and ``JAN``, ``L`` for a month's last day), read by ``cronsim``
in the schedule's IANA time zone, with daylight-saving gaps and repeats handled as Debian's
cron does. Times are Unix seconds.

A tick that came while no scheduler ran (every process was down) is *missed* when it is
more than the grace (``AGENTBUS_SCHEDULE_MISFIRE_GRACE_S``) late: ``skip`` runs nothing
for missed ticks, ``run_once`` runs one run for all of them. Either way the schedule then
moves on to its next tick after now.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

Missed = Literal["skip", "run_once"]
"""What a schedule does about ticks missed while nothing ran."""


class BadSchedule(ValueError):
    """A cron expression or time zone that cannot be used; ``field`` names which."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


def zone(name: str) -> ZoneInfo:
    """The IANA time zone ``name`` (``BadSchedule`` on ``timezone`` if there is none)."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as e:
        raise BadSchedule(
            f"unknown time zone {name!r} (use an IANA name such as UTC or Europe/Paris)",
            "timezone",
        ) from e


def next_after(cron: str, timezone: str, after: float) -> int:
    """The first tick of ``cron`` in ``timezone`` strictly after ``after``.

    Raises:
        BadSchedule: the expression or the zone cannot be used, or it never fires.
    """
    fields = cron.split()
    if len(fields) != 5:
        raise BadSchedule(
            f"a cron expression has 5 fields (minute hour day month weekday); got {len(fields)}",
            "cron",
        )
    start = datetime.fromtimestamp(int(after), zone(timezone))
    try:
        return int(next(CronSim(cron, start)).timestamp())
    except CronSimError as e:
        raise BadSchedule(f"bad cron expression {cron!r}: {e}", "cron") from e
    except StopIteration as e:
        raise BadSchedule(f"the cron expression {cron!r} never fires", "cron") from e


def latest_at_or_before(cron: str, timezone: str, at: float) -> int:
    """The last tick of ``cron`` in ``timezone`` at or before ``at``."""
    start = datetime.fromtimestamp(int(at), zone(timezone)) + timedelta(seconds=1)
    try:
        return int(next(CronSim(cron, start, reverse=True)).timestamp())
    except (CronSimError, StopIteration) as e:
        raise BadSchedule(f"the cron expression {cron!r} has no earlier tick", "cron") from e


@dataclass(frozen=True, slots=True)
class TickPlan:
    """What a due schedule does now.

    Attributes:
        tick_at: the tick this pass records (the latest that has come).
        run: whether that tick starts a run (else it is recorded as skipped).
        next_run_at: the schedule's next tick after now.
        missed: whether the tick (or any tick before it) was missed.
    """

    tick_at: int
    run: bool
    next_run_at: int
    missed: bool


def plan(
    cron: str, timezone: str, next_run_at: int, now: float, policy: Missed, grace_s: float
) -> TickPlan:
    """What to do for a schedule whose next tick, ``next_run_at``, has come by ``now``.

    The latest tick at or before ``now`` stands for every tick since ``next_run_at``: it
    runs when it is on time (at most ``grace_s`` late), or, missed, when the policy is
    ``run_once``; earlier ticks never run on their own.
    """
    latest = max(next_run_at, latest_at_or_before(cron, timezone, now))
    late = now - latest > grace_s
    skipped_before = latest > next_run_at
    return TickPlan(
        tick_at=latest,
        run=not late or policy == "run_once",
        next_run_at=next_after(cron, timezone, max(now, latest)),
        missed=late or skipped_before,
    )


def iso(at: int) -> str:
    """A tick as an ISO 8601 UTC timestamp."""
    return datetime.fromtimestamp(at, UTC).isoformat()
