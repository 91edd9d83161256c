"""Reading the plan: steps, never answers, and the sources it names."""

from __future__ import annotations

import pytest

from agents.roles.planner import FALLBACK_STEP, read_plan, steps_only


@pytest.mark.parametrize(
    ("steps", "kept"),
    [
        # The plan: the stated result is cut, the work is kept.
        (["Duration: 17:50 - 14:05 = 35 minutes"], ["Duration: 17:50 - 14:05"]),
        (["Compute 15% of 2480, which is 372"], ["Compute 15% of 2480"]),
        (
            ["Multiply 1234 by 5678 with the calculator"],
            ["Multiply 1234 by 5678 with the calculator"],
        ),
        (["Convert hours to minutes (60 per hour)"], ["Convert hours to minutes (60 per hour)"]),
        # A figure the question does not hold is a result in disguise.
        (["The trip takes 35 minutes", "Answer"], ["Answer"]),
        (["35"], [FALLBACK_STEP]),
    ],
)
def test_a_plan_step_that_states_a_result_is_cut_or_dropped(
    steps: list[str], kept: list[str]
) -> None:
    question = "A train leaves at 14:05 and arrives at 17:50; what is 15% of 2480 and 1234 × 5678?"
    assert steps_only(steps, question) == kept


def test_a_plan_is_read_from_json_or_bullets() -> None:
    assert read_plan('{"plan": ["look it up", "answer"]}', []) == (["look it up", "answer"], [])
    assert read_plan("- look it up\n- answer", ["documents"]) == (
        ["look it up", "answer"],
        ["documents"],
    )
    plan = '{"plan": ["search"], "sources": ["web", "nope"]}'
    assert read_plan(plan, ["documents", "web"]) == (["search"], ["web"])
