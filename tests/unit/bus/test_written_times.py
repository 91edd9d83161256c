"""Clock times, dates and durations as text writes them, read once for every package."""

from __future__ import annotations

import datetime as dt

import pytest

from bus import written_times


@pytest.mark.parametrize(
    ("text", "minutes"),
    [("14:05", 845), ("9:30:30", 570.5), ("2:30 pm", 870), ("12:00 a.m.", 0), ("24:00", 1440)],
)
def test_a_clock_time_reads_as_minutes_since_midnight(text: str, minutes: float) -> None:
    match = written_times.CLOCK.search(f"at {text} sharp")
    assert match is not None
    assert written_times.clock_minutes(match) == minutes


@pytest.mark.parametrize("text", ["25:00", "13:00 pm", "10:61"])
def test_what_looks_like_a_clock_time_but_is_none_reads_as_none(text: str) -> None:
    match = written_times.CLOCK.search(text)
    assert match is not None
    assert written_times.clock_minutes(match) is None


@pytest.mark.parametrize("text", ["version 1.10:30", "12:30:45:10", "ratio 3:4:5"])
def test_no_clock_time_inside_a_longer_run_of_digits(text: str) -> None:
    assert written_times.CLOCK.search(text) is None


def test_a_duration_in_hours_and_minutes_reads_as_minutes() -> None:
    match = written_times.DURATION.search("the trip takes 3 hours and 45 minutes")
    assert match is not None
    assert written_times.duration_minutes(match) == 225


@pytest.mark.parametrize(
    "text",
    [
        "2026-05-14",
        "14 May 2026",
        "May 14, 2026",
        "14th of May 2026",
        "14 de maio de 2026",
        "14 de mayo de 2026",
        "le 14 mai 2026",
        "am 14. Mai 2026",
    ],
)
def test_a_date_is_read_as_written_in_several_languages(text: str) -> None:
    assert written_times.dates(f"It starts {text}.") == {dt.date(2026, 5, 14)}


def test_words_between_a_number_and_a_year_are_no_date_unless_they_name_a_month() -> None:
    assert written_times.dates("We shipped 14 pallets 2026 style, and 3 Falcon 2021.") == set()
    assert written_times.dates("Release 2026-02-30 does not exist") == set()


def test_dates_come_in_the_order_the_text_states_them() -> None:
    text = "From 16 May 2026 back to 2026-05-14."
    assert written_times.dates_in_order(text) == [dt.date(2026, 5, 16), dt.date(2026, 5, 14)]
