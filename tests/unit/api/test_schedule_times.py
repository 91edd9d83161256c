"""When scheduled ticks fall, and what a due schedule does about ticks missed while down."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from api.app.schedule_times import BadSchedule, latest_at_or_before, next_after, plan


def at(text: str, zone: str = "UTC") -> int:
    """Unix seconds of a local wall-clock time in ``zone``."""
    return int(datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(zone)).timestamp())


def test_the_next_tick_is_strictly_after_and_read_in_the_schedules_zone() -> None:
    monday_8 = at("2027-03-01T08:00:00", "Europe/Paris")

    assert next_after("0 8 * * MON", "Europe/Paris", monday_8 - 1) == monday_8
    assert next_after("0 8 * * MON", "Europe/Paris", monday_8) == at(
        "2027-03-08T08:00:00", "Europe/Paris"
    )
    assert datetime.fromtimestamp(monday_8, UTC).hour == 7  # 08:00 in Paris, winter


def test_a_daily_tick_in_the_spring_forward_gap_fires_once_right_after_it() -> None:
    # 2027-03-28: Paris clocks jump from 02:00 to 03:00, so 02:30 does not exist that day.
    before = at("2027-03-27T12:00:00", "Europe/Paris")
    first = next_after("30 2 * * *", "Europe/Paris", before)
    second = next_after("30 2 * * *", "Europe/Paris", first)

    assert first == at("2027-03-28T03:00:00", "Europe/Paris")
    assert second == at("2027-03-29T02:30:00", "Europe/Paris")


def test_the_latest_tick_at_or_before_a_time_includes_that_time() -> None:
    hour = at("2027-05-01T10:00:00")

    assert latest_at_or_before("0 * * * *", "UTC", hour) == hour
    assert latest_at_or_before("0 * * * *", "UTC", hour + 3599) == hour
    assert latest_at_or_before("0 * * * *", "UTC", hour - 1) == hour - 3600


@pytest.mark.parametrize(
    ("cron", "zone", "field"),
    [
        ("* * *", "UTC", "cron"),
        ("0 0 * * * *", "UTC", "cron"),  # six fields (seconds) are not cron's five
        ("61 * * * *", "UTC", "cron"),
        ("0 0 31 2 *", "UTC", "cron"),  # never fires
        ("every day", "UTC", "cron"),
        ("0 8 * * *", "Mars/Olympus", "timezone"),
        ("0 8 * * *", "../etc/passwd", "timezone"),
    ],
)
def test_an_unusable_cron_or_zone_names_its_field(cron: str, zone: str, field: str) -> None:
    with pytest.raises(BadSchedule) as caught:
        next_after(cron, zone, at("2027-01-01T00:00:00"))

    assert caught.value.field == field


def test_a_tick_on_time_runs_and_the_schedule_moves_to_the_next() -> None:
    tick = at("2027-05-01T10:00:00")

    todo = plan("0 * * * *", "UTC", tick, tick + 5, "skip", grace_s=60)

    assert (todo.tick_at, todo.run, todo.next_run_at, todo.missed) == (
        tick,
        True,
        tick + 3600,
        False,
    )


@pytest.mark.parametrize(("policy", "runs"), [("skip", False), ("run_once", True)])
def test_ticks_missed_while_down_are_skipped_or_run_once_for_all(policy: str, runs: bool) -> None:
    first = at("2027-05-01T10:00:00")
    now = first + 5 * 3600 + 1800  # down from 10:00 to 15:30: six ticks missed

    todo = plan("0 * * * *", "UTC", first, now, policy, grace_s=60)  # type: ignore[arg-type]

    assert todo.tick_at == first + 5 * 3600  # one tick stands for all of them
    assert todo.run is runs and todo.missed
    assert todo.next_run_at == first + 6 * 3600  # the next after now, not a missed one


def test_a_late_tick_within_the_grace_still_runs_under_skip() -> None:
    tick = at("2027-05-01T10:00:00")

    assert plan("0 * * * *", "UTC", tick, tick + 90, "skip", grace_s=120).run
    assert not plan("0 * * * *", "UTC", tick, tick + 121, "skip", grace_s=120).run
