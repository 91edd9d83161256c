"""What `verified` promises (`agents.checks.verified`, `agents.checks.judge_trust`): yes only
when a check established it, no when the last judge asked for changes, unknown otherwise."""

from __future__ import annotations

import json

from agents.checks.judge_trust import JudgePrecision, PrecisionTable, shipped, trusted
from agents.checks.verified import NOT_JUDGED, conclusion
from agents.understanding.claims import grounding
from bus.run_state import ChatMessage, JudgeProgress, Recompute, Review, RunSettings, RunState

HOLIDAY = (
    "Acme onboarding guide. Holiday requests go through the HR portal at least 10 working "
    "days in advance. Each employee has 27 days of paid holiday per year."
)


TRAIN = "A train leaves at 14:05 and arrives at 17:50. How long is the trip in minutes?"


def _state(
    *reviews: Review,
    question: str = TRAIN,
    accuracy: str = "standard",
    mode: str = "multi",
    draft: str = "The trip takes 225 minutes.",
    judge: JudgeProgress | None = None,
) -> RunState:
    s = RunSettings.model_validate({"mode": mode, "accuracy": accuracy})
    return RunState(
        question=question,
        settings=s,
        draft=draft,
        critiques=[r for r in reviews if r.agent == "critic"],
        verdicts=[r for r in reviews if r.agent == "verifier"],
        judge=judge or JudgeProgress(),
    )


def _recomputed(expression: str, result: float, status: str = "ok") -> JudgeProgress:
    check = Recompute(call_id="j5r0", tool="calculator", arguments={"expression": expression})
    body = {"status": status, "result": {"result": result, "unit": None, "text": str(result)}}
    if status != "ok":
        body = {"status": status, "code": "tool_error", "message": "bad expression"}
    message = ChatMessage(
        role="tool", tool_call_id="j5r0", name="calculator", content=json.dumps(body)
    )
    return JudgeProgress(phase="done", checks=[check], messages=[message])


OK = Review(agent="critic", verdict="OK", reason="reads as supported")
PASS = Review(agent="verifier", verdict="pass", reason="fine")


def test_an_approved_answer_whose_recompute_matched_is_verified() -> None:
    state = _state(OK, judge=_recomputed("17:50 - 14:05", 225))
    verified, why = conclusion(state)
    assert verified is True
    assert "recomputed: confirmed with the calculator: 17:50 - 14:05 = 225" in why


def test_a_match_of_a_recompute_only_the_model_planned_establishes_nothing() -> None:
    # Asked for an average, the model "recomputes" the sum the draft gives: it matches.
    asked = "What is the average number of tickets closed per day in week 9?"
    summed = _recomputed("12 + 18 + 15 + 9 + 6", 60)
    state = _state(OK, question=asked, draft="60 tickets a day on average [1].", judge=summed)
    verified, why = conclusion(state)
    assert verified is None and "not established" in why
    # The question's own arithmetic, recomputed and matched, does establish it.
    sums = _state(OK, question="What is 12 + 18 + 15 + 9 + 6?", draft="It is 60.", judge=summed)
    assert conclusion(sums)[0] is True


def test_an_approval_from_a_judge_whose_precision_is_not_measured_is_unknown() -> None:
    verified, why = conclusion(_state(OK, draft="Each employee has 27 days [1]."))
    assert verified is None
    assert why.startswith("critic OK: reads as supported; not established")
    # In accurate mode the verifier's pass is the approval, and it is not measured either.
    assert conclusion(_state(OK, PASS, accuracy="accurate"))[0] is None


def test_an_approval_from_a_judge_measured_precise_for_the_model_is_verified() -> None:
    verified, why = conclusion(_state(PASS, accuracy="accurate"), lambda j: j == "verifier")
    assert verified is True and "precision is measured" in why
    # The critic's approval is not the verifier's: trusting one judge verifies nothing else.
    assert conclusion(_state(OK), lambda j: j == "verifier")[0] is None


def test_a_recompute_that_could_not_run_establishes_nothing() -> None:
    state = _state(OK, judge=_recomputed("17:50 - 14:05", 0, status="error"))
    assert conclusion(state)[0] is None


def test_a_judge_that_cannot_tell_leaves_it_unknown_whatever_else_matched() -> None:
    unknown = Review(agent="critic", verdict="UNKNOWN", reason="unreadable critique: OK if")
    state = _state(unknown, judge=_recomputed("17:50 - 14:05", 225))
    assert conclusion(state, lambda j: True) == (None, "critic UNKNOWN: unreadable critique: OK if")
    unreadable = Review(agent="verifier", verdict="unknown", reason="unreadable")
    assert conclusion(_state(OK, unreadable, accuracy="accurate"), lambda j: True)[0] is None


def test_a_figure_the_evidence_states_differently_ends_the_run_not_verified() -> None:
    question = "How many days of paid holiday do I get?"
    draft = "You get 17 days of paid holiday per year."
    found = grounding.mismatches(draft, question, [HOLIDAY], [])
    assert any("27 days of paid holiday" in f for f in found), found
    # The judge turns the finding into its verdict; on the last attempt the run ends on it.
    revise = Review(agent="critic", verdict="REVISE", reason="; ".join(found))
    verified, why = conclusion(_state(revise, draft=draft), lambda j: True)
    assert verified is False and "27 days of paid holiday" in why


def test_single_mode_and_a_run_no_judge_reviewed_are_unknown() -> None:
    assert conclusion(_state(OK, mode="single")) == (None, NOT_JUDGED)
    assert conclusion(_state()) == (None, "no judge reviewed this answer")


def test_a_measured_precision_counts_only_at_95_percent_over_enough_approvals() -> None:
    def row(approved: int, right: int) -> PrecisionTable:
        return PrecisionTable(
            rows=[
                JudgePrecision(model="m", judge="critic", approved=approved, approved_right=right)
            ]
        )

    assert trusted("m", "critic", row(20, 19))
    assert not trusted("m", "critic", row(20, 18))  # 90 %
    assert not trusted("m", "critic", row(5, 5))  # 100 %, but five approvals measure nothing
    assert not trusted("m", "verifier", row(20, 20))  # no row for this judge
    assert not trusted("other", "critic", row(20, 20))


def test_the_shipped_table_never_trusts_the_reference_that_approves_everything() -> None:
    table = shipped()
    for row in table.rows:
        assert row.approved_right <= row.approved
    assert not any(r.trusted for r in table.rows if r.model == "scripted")


def test_an_unknown_says_which_check_kept_it_from_being_established() -> None:
    # The question's own arithmetic was recomputed and matched, but a check the model
    # planned could not run: the reason names that check, not a recompute that ran.
    matched = _recomputed("17:50 - 14:05", 225)
    planned = Recompute(call_id="j5r1", tool="calculator", arguments={"expression": "14:05 + 3"})
    refused = ChatMessage(
        role="tool",
        tool_call_id="j5r1",
        name="calculator",
        content=json.dumps({"status": "error", "code": "invalid_argument", "message": "no"}),
    )
    both = JudgeProgress(
        phase="done",
        checks=[*matched.checks, planned],
        messages=[*matched.messages, refused],
    )
    verified, why = conclusion(_state(OK, judge=both))
    assert verified is None
    assert "a check of the draft did not hold (could not recompute '14:05 + 3': no)" in why
    assert "no tool recomputed" not in why
    # Nothing recomputed from the question: that is what the reason says.
    asked = "Each employee has how many days of paid holiday?"
    _, plain = conclusion(_state(OK, question=asked, draft="27 days [1]."))
    assert "not established: no tool recomputed what the question asks for" in plain
