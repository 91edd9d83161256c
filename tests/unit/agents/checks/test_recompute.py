"""Reading the judges: recompute plans and comparisons, stated results."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Literal

import pytest

from agents.checks.recompute import compare, confirmed, dates, figures, plan_calls, states_figure
from bus.run_state import ChatMessage, Recompute


def _result(call_id: str, body: Mapping[str, object]) -> ChatMessage:
    return ChatMessage(
        role="tool", tool_call_id=call_id, name="calculator", content=json.dumps(body)
    )


def _check(expression: str, claim: str = "", call_id: str = "j5r0") -> Recompute:
    return Recompute(
        call_id=call_id, tool="calculator", arguments={"expression": expression}, claim=claim
    )


def test_a_recompute_plan_becomes_calculator_calls_under_our_ids() -> None:
    reply = '{"checks": [{"claim": "35 minutes", "expression": "17:50 - 14:05 = 35"}]}'
    [check] = plan_calls(reply, "j5")
    assert check.call_id == "j5r0" and check.tool == "calculator"
    assert check.arguments == {"expression": "17:50 - 14:05"}  # the stated result cut off
    assert check.claim == "35 minutes"
    assert plan_calls("no JSON here", "j5") == []
    assert plan_calls('{"checks": [{"claim": "x", "expression": "pi"}]}', "j5") == []


@pytest.mark.parametrize(
    ("draft", "value"),
    [
        ("The trip takes 225 minutes.", 225),
        ("It takes 3 hours and 45 minutes.", 225),
        ("About 3 h 45 min.", 225),
        ("3.75 hours", 225),
        ("1234 × 5678 = 7,006,652", 7006652),
        ("15% of 2480", 0.15),
        ("The ratio is 0.33", 1 / 3),
    ],
)
def test_the_figures_a_draft_states(draft: str, value: float) -> None:
    assert any(abs(f - value) < 0.01 for f in figures(draft))


def test_written_and_iso_dates_are_read() -> None:
    found = dates("Due on 24 April 2026, or was it April 25, 2026? Not 2026-02-30; 2026-05-01.")
    assert {str(d) for d in found} == {"2026-04-24", "2026-04-25", "2026-05-01"}


def test_a_figure_recomputed_differently_is_a_mismatch_with_the_recomputed_value() -> None:
    checks = [_check("17:50 - 14:05", claim="35 minutes")]
    body = {
        "status": "ok",
        "code": "ok",
        "result": {"result": 225, "unit": "minutes", "text": "3 h 45 min"},
    }
    thread = [_result("j5r0", body)]
    findings, mismatches = compare(checks, thread, "The trip takes 35 minutes.")
    assert "REFUTED" in findings
    [why] = mismatches
    assert "225 minutes (3 h 45 min)" in why and "35 minutes" in why
    # The same figure said another way is confirmed, not a mismatch.
    findings, mismatches = compare(checks, thread, "It takes 3 hours and 45 minutes.")
    assert mismatches == [] and "confirmed" in findings


def _ok(result: float, **more: object) -> dict[str, object]:
    return {"status": "ok", "code": "ok", "result": {"result": result, **more}}


def test_a_subtraction_written_backwards_neither_refutes_nor_confirms_the_draft() -> None:
    # Change from a 10 EUR note for 2 books at 3.20: the model wrote 2 * 3.20 - 10.
    checks = [_check("2 * 3.20 - 10", claim="3.60 EUR")]
    thread = [_result("j5r0", _ok(-3.6))]
    draft = "You get 3.60 EUR in change."
    findings, mismatches = compare(checks, thread, draft)
    assert mismatches == []
    assert "REFUTED" not in findings and "could not tell" in findings
    assert confirmed(checks, thread, draft) == []  # and it establishes nothing either
    # A clock difference the other way round is the rest of the day: 1215 for 225.
    clocks = [_check("14:05 - 17:50")]
    wrapped = [_result("j5r0", _ok(1215, unit="minutes", text="20 h 15 min"))]
    assert compare(clocks, wrapped, "The trip takes 225 minutes.")[1] == []


def test_a_recompute_that_differs_by_more_than_its_sign_still_refutes() -> None:
    checks = [_check("10 - 2 * 3.20")]
    thread = [_result("j5r0", _ok(3.6))]
    assert compare(checks, thread, "You get 6.40 EUR in change.")[1] != []
    # A result with no subtraction in it is no mis-ordered operand: -3.6 refutes 3.60.
    negative = [_result("j5r0", _ok(-3.6))]
    assert compare([_check("-1.8 * 2")], negative, "It is 3.60.")[1] != []


def test_an_expression_whose_order_the_question_fixes_refutes_its_mirror_image() -> None:
    # "starts at 21:40 and ends at 06:15": the question orders the clock times, so 925
    # minutes is refuted by 06:15 - 21:40 = 515 even though 925 is 1440 - 515.
    checks = [_check("06:15 - 21:40")]
    thread = [_result("j5r0", _ok(515, unit="minutes", text="8 h 35 min"))]
    draft = "The shift lasts 925 minutes."
    assert compare(checks, thread, draft)[1] == []
    assert compare(checks, thread, draft, ordered=["06:15 - 21:40"])[1] != []


def test_an_arrival_time_recomputed_as_a_clock_time_confirms_or_refutes_the_draft() -> None:
    checks = [_check("21:15 + 9 h")]
    thread = [_result("j5r0", _ok(375, unit="time", text="06:15 (+1 day)", days=1))]
    assert confirmed(checks, thread, "It docks at 06:15 the next morning.") != []
    findings, mismatches = compare(checks, thread, "It docks at 07:15.")
    [why] = mismatches
    assert "06:15 (+1 day)" in why and "REFUTED" in findings


def test_a_failed_recomputation_is_reported_never_a_mismatch() -> None:
    body = {"status": "error", "code": "invalid_argument", "message": "not valid arithmetic"}
    findings, mismatches = compare([_check("what?")], [_result("j5r0", body)], "It is 12.")
    assert mismatches == [] and "could not recompute" in findings


def test_a_recomputed_date_must_be_the_drafts() -> None:
    body = {
        "status": "ok",
        "code": "ok",
        "result": {"result": 739730, "unit": "date", "text": "2026-04-24"},
    }
    thread = [_result("j5r0", body)]
    assert compare([_check("2026-03-10 + 45")], thread, "It is 24 April 2026.")[1] == []
    assert compare([_check("2026-03-10 + 45")], thread, "It is 25 April 2026.")[1] != []


def test_only_drafts_with_digits_are_recomputed() -> None:
    assert states_figure("It takes 225 minutes.")
    assert not states_figure("Mirela Okafor leads it.")


def test_a_recompute_built_from_the_drafts_own_figures_is_dropped() -> None:
    question = "A train leaves at 14:05 and arrives at 17:50. And what is 15% of 2,480?"
    reply = json.dumps(
        {
            "checks": [
                {
                    "claim": "35",
                    "expression": "3 * 60 + 45",
                },  # the draft's "3 h 45": not from the question
                {"claim": "372", "expression": "2480 * 0.15"},  # 15 % as a fraction: from it
            ]
        }
    )
    [check] = plan_calls(reply, "j5", sources=question)
    assert check.arguments == {"expression": "2480 * 0.15"} and check.call_id == "j5r0"


@pytest.mark.parametrize(
    ("asks", "draft", "right"),
    [
        ("time", "It is 11:00 PM in Tokyo.", True),
        ("time", "It is 23:00 in Tokyo.", True),
        ("time", "It is 14:00 in Tokyo.", False),
        ("date", "Today is 11 March 2026 in Auckland.", True),
        ("date", "It is 2026-03-10 in Auckland.", False),
        ("weekday", "It is Wednesday there.", True),
        ("weekday", "It is Tuesday there.", False),
    ],
)
def test_a_question_about_now_is_checked_with_current_time(
    asks: Literal["date", "time", "weekday"], draft: str, right: bool
) -> None:
    check = Recompute(
        call_id="j5r0", tool="current_time", arguments={"timezone": "Asia/Tokyo"}, asks=asks
    )
    body = {
        "status": "ok",
        "code": "ok",
        "result": {
            "timezone": "Asia/Tokyo",
            "iso": "2026-03-11T23:00:00+09:00",
            "date": "2026-03-11",
            "time": "23:00:00",
            "weekday": "Wednesday",
            "utc_offset": "+09:00",
            "unix": 0,
        },
    }
    findings, mismatches = compare([check], [_result("j5r0", body)], draft)
    assert (mismatches == []) is right, (findings, mismatches)
    if not right:
        assert "current_time for Asia/Tokyo" in mismatches[0]


def test_a_bare_figure_is_no_recomputation() -> None:
    # The 0.5B "recomputed" the port it quoted (6544): its result made the figure look
    # computed, and the check that it came from the wrong clause let it through.
    bare = [{"claim": "6544", "expression": "6544"}, {"claim": "d", "expression": "2026-12-25"}]
    reply = json.dumps({"checks": bare})
    assert plan_calls(reply, "j5", "port 6544 2026-12-25") == []
    kept = '{"checks": [{"claim": "290", "expression": "2026-12-25 - 2026-03-10"}]}'
    assert len(plan_calls(kept, "j5", "2026-12-25 2026-03-10")) == 1


def test_a_check_of_only_the_figures_the_draft_quotes_is_no_recomputation() -> None:
    # The 0.5B planned 11:30 - 14:30 for "open from 11:30 to 14:30 [1]" and the fact-check
    # sent the right draft back: "the draft does not state 1260 minutes".
    reply = '{"checks": [{"claim": "hours", "expression": "11:30 - 14:30"}]}'
    sources = "When is the canteen open? The canteen is open from 11:30 to 14:30."
    quoted = "The canteen is open from 11:30 to 14:30 on weekdays. [1]"
    assert plan_calls(reply, "j5", sources, quoted) == []
    # A draft that claims a result still has it checked.
    claimed = "It is open from 11:30 to 14:30, 4 hours a day [1]."
    assert len(plan_calls(reply, "j5", sources, claimed)) == 1


def test_a_citation_marker_is_not_a_figure_the_draft_states() -> None:
    check = Recompute(call_id="j5r0", tool="calculator", arguments={"expression": "3 - 2"})
    body = {"status": "ok", "code": "ok", "result": {"expression": "3 - 2", "result": 1}}
    _, mismatches = compare([check], [_result("j5r0", body)], "The answer is 2 [1].")
    assert mismatches  # "[1]" does not state 1
