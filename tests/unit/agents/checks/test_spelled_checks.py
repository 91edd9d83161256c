"""The recomputations a question or a draft spells out (`agents.checks.spelled_checks`),
no model."""

from __future__ import annotations

import datetime as dt

import pytest

from agents.checks.spelled_checks import (
    asked_for,
    clock_after,
    clock_question,
    draft_arithmetic,
    durations,
    question_arithmetic,
    spelled,
)
from gateway.tools.calculator import evaluate, with_units

TODAY = dt.date(2026, 3, 10)


def _value(expression: str) -> float:
    arithmetic, _ = with_units(expression)
    return evaluate(arithmetic)


@pytest.mark.parametrize(
    ("question", "value"),
    [
        ("What is 1234 × 5678?", 7006652),
        ("What is 15% of 2480?", 372),
        ("In Python, what is the value of 17 // 5?", 3),
        ("In Python, what does sum([3, 5, 7]) * 2 evaluate to?", 30),
        ("What is 2 ** 10?", 1024),
        ("Calculate (12 + 8) / 4.", 5),
        ("In Python, what does len('agentbus') return?", 8),
        ("What is 1234 multiplied by 5678?", 7006652),
        ("What is 7 divided by 8, as a decimal?", 0.875),
        ("What is 3.5 times 4.2?", 14.7),
        ("What is 2 to the power of 20?", 1048576),
        ("What is the square root of 1764?", 42),
        ("What is the remainder when 1000 is divided by 7?", 6),
        ("Compute 98765 - 43210.", 55555),
    ],
)
def test_the_arithmetic_a_question_asks_for_outright(question: str, value: float) -> None:
    [expression] = question_arithmetic(question)
    assert _value(expression) == pytest.approx(value)


@pytest.mark.parametrize(
    "question",
    [
        "You buy 3 coffees at 4.75 EUR each and pay with a 20 EUR note. How much change?",
        "What is the total meal allowance for a 5-day trip in Germany?",
        "What is 42?",
        "A jacket costs 80 EUR and is discounted by 25%. What is the sale price?",
    ],
)
def test_a_question_that_does_not_spell_its_arithmetic_out_gives_none(question: str) -> None:
    assert question_arithmetic(question) == []


@pytest.mark.parametrize(
    ("question", "evidence", "value"),
    [
        ("A train leaves at 14:05 and arrives at 17:50. How long is the trip in minutes?", [], 225),
        ("A flight departs at 22:10 and lands at 01:30 the next morning. How long?", [], 200),
        ("How many days are there from 2026-03-10 to 2026-12-25?", [], 290),
        ("How many days are there until 2026-12-25?", [], 290),
        (
            "How many minutes is the Lisbon office open each day?",
            ["The office opens at 07:30 and closes at 19:00."],
            690,
        ),
    ],
)
def test_a_duration_asked_for_between_two_times_or_dates(
    question: str, evidence: list[str], value: float
) -> None:
    [expression] = durations(question, evidence, TODAY)
    assert _value(expression) % 1440 == value


@pytest.mark.parametrize(
    ("question", "expression"),
    [
        ("A ferry leaves at 21:15 and the crossing takes 9 hours. When does it dock?",
         "21:15 + 9 h"),
        ("The bus departs at 06:50 and takes 2 hours and 25 minutes. At what time does it "
         "arrive?", "06:50 + 2 h 25 min"),
        ("A class starts at 13:10 and lasts 50 minutes. When does it end?", "13:10 + 50 min"),
    ],
)  # fmt: skip
def test_a_clock_time_asked_for_from_a_time_and_a_duration_is_recomputed(
    question: str, expression: str
) -> None:
    assert clock_after(question) == [expression]
    assert expression in asked_for(question, [], TODAY)  # the question fixes its order
    assert expression in spelled(question, [], "It arrives at 06:15.", TODAY)


def test_no_clock_time_is_guessed_without_one_time_and_one_duration() -> None:
    assert clock_after("When does the office open?") == []
    assert clock_after("It leaves at 09:00 or 10:00 and takes 2 hours. When?") == []
    assert clock_after("A train leaves at 14:05 and arrives at 17:50. How long is it?") == []


def test_a_duration_is_not_guessed_from_three_times_or_without_being_asked() -> None:
    three = ["Opens at 07:30, lunch at 12:00, closes at 19:00."]
    assert durations("How many minutes is it open?", three, TODAY) == []
    assert durations("When does the train leave, 14:05 or 17:50?", [], TODAY) == []


@pytest.mark.parametrize(
    ("draft", "value"),
    [
        ("5 days × 62 EUR = 320 EUR [1].", 310),
        ("1234 × 5678 = 700002.", 7006652),
        ("The change is 20 - 3 * 4.75 = 6.25 EUR.", 5.75),
        ("15% × 2480 = 3720", 372),
    ],
)
def test_the_drafts_own_arithmetic_is_recomputed(draft: str, value: float) -> None:
    [expression] = draft_arithmetic(draft)
    assert _value(expression) == pytest.approx(value)


def test_a_draft_without_written_out_arithmetic_gives_none() -> None:
    assert draft_arithmetic("The trip takes 225 minutes (3 h 45 min), from 14:05.") == []
    assert draft_arithmetic("Port 6543 [1]; 2026-03-10.") == []


def test_what_a_question_and_its_draft_spell_out_together_without_repeats() -> None:
    found = spelled("What is 1234 × 5678?", [], "1234 × 5678 = 700002.", TODAY)
    assert found == ["1234 * 5678"]


def test_a_duration_is_recomputed_the_way_round_the_question_asks() -> None:
    # Seen through `make up` (0.5B): the researcher computed 14:05 - 17:50 (1215 minutes),
    # and the fact-check told it to answer with 1215 beside the right 225.
    question = "A train leaves at 14:05 and arrives at 17:50. How long is the trip in minutes?"
    draft = "14:05 - 17:50 = 1215 minutes."
    assert spelled(question, [], draft, TODAY) == ["17:50 - 14:05"]


def test_written_out_clock_and_date_arithmetic_is_recomputed_as_the_calculator_reads_it() -> None:
    assert draft_arithmetic("Duration: 17:50 - 14:05 = 35 minutes.") == ["17:50 - 14:05"]
    assert draft_arithmetic("2026-12-25 - 2026-03-10 = 289 days") == ["2026-12-25 - 2026-03-10"]
    assert question_arithmetic("What is max(3, 9) x 2?") == ["max(3, 9) * 2"]


@pytest.mark.parametrize(
    ("question", "asks", "arguments"),
    [
        ("What time is it right now in Tokyo?", "time", {"timezone": "Asia/Tokyo"}),
        (
            "What is the current date in Auckland, New Zealand?",
            "date",
            {"timezone": "Pacific/Auckland"},
        ),
        (
            "What day of the week is it in Auckland right now?",
            "weekday",
            {"timezone": "Pacific/Auckland"},
        ),
        ("What time is it now in New York?", "time", {"timezone": "America/New_York"}),
        ("What is today's date?", "date", {}),
        ("What year is it now?", "year", {}),
        ("Which month is it now?", "month", {}),
        ("What is the current time in UTC?", "time", {"timezone": "UTC"}),
    ],
)
def test_a_question_about_now_is_a_current_time_call(
    question: str, asks: str, arguments: dict[str, str]
) -> None:
    assert clock_question(question) == (asks, arguments)


def test_a_question_not_about_now_asks_nothing_of_the_clock() -> None:
    assert clock_question("What time does the Lisbon office open?") is None
    assert clock_question("How many days are there from today until 2026-12-25?") is None
