"""current_time: IANA timezones, UTC by default, clear errors for bad names."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gateway.errors import InvalidArgument
from gateway.tools.current_time import CurrentTime

FIXED = datetime(2025, 7, 14, 12, 30, 5, tzinfo=UTC)


def tool() -> CurrentTime:
    return CurrentTime(clock=lambda: FIXED)


async def test_defaults_to_utc() -> None:
    result = await tool().run({}, None)
    assert result == {
        "timezone": "UTC",
        "iso": "2025-07-14T12:30:05+00:00",
        "date": "2025-07-14",
        "time": "12:30:05",
        "weekday": "Monday",
        "utc_offset": "+00:00",
        "unix": FIXED.timestamp(),
    }


@pytest.mark.parametrize(
    ("zone", "iso", "offset"),
    [
        ("Europe/Paris", "2025-07-14T14:30:05+02:00", "+02:00"),
        ("America/New_York", "2025-07-14T08:30:05-04:00", "-04:00"),
        ("Asia/Kolkata", "2025-07-14T18:00:05+05:30", "+05:30"),
    ],
)
async def test_named_timezones(zone: str, iso: str, offset: str) -> None:
    result = await tool().run({"timezone": zone}, None)
    assert (result["iso"], result["utc_offset"], result["timezone"]) == (iso, offset, zone)


@pytest.mark.parametrize("zone", ["Mars/Olympus", "Europe", "../../etc/passwd", "/etc/localtime"])
async def test_an_invalid_timezone_is_a_clear_error(zone: str) -> None:
    with pytest.raises(InvalidArgument, match=r"unknown timezone .* IANA name"):
        await tool().run({"timezone": zone}, None)


async def test_the_real_clock_is_aware_and_current() -> None:
    result = await CurrentTime().run({}, None)
    now = datetime.fromisoformat(result["iso"])
    assert abs((datetime.now(UTC) - now).total_seconds()) < 60
