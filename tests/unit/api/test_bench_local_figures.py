"""`agentbus bench local`'s figures from per-call records: per kind, per run, after the tool."""

from __future__ import annotations

from agentbus_bench.local_figures import after_tool_s, by_kind, run_figures, summary
from agents.llm.local_calls import CallRecord, Step


def call(
    step: Step,
    started: float,
    wall: float,
    *,
    agent: str = "researcher",
    run_id: str = "r1",
    first: float | None = 0.5,
    prefill: int = 10,
    cached: int = 90,
    decoded: int = 10,
    decode_ms: float = 1000.0,
    drafted: int = 0,
    accepted: int = 0,
) -> CallRecord:
    return CallRecord(
        agent=agent,
        run_id=run_id,
        step=step,
        started=started,
        first_token_s=first,
        wall_s=wall,
        prompt_tokens=prefill + cached,
        prefill_tokens=prefill,
        cached_tokens=cached,
        decode_tokens=decoded,
        prefill_ms=100.0,
        decode_ms=decode_ms,
        decode_tps=decoded / (decode_ms / 1000),
        draft_tokens=drafted,
        draft_accepted=accepted,
    )


TOOL_TURN = [
    call("decision", 0.0, 2.0),
    call("decision", 3.0, 1.0),  # after the tool result
    call("answer", 4.0, 2.0, first=0.25),
]


def test_after_the_tool_runs_from_the_second_decision_to_the_answers_first_token() -> None:
    assert after_tool_s(TOOL_TURN) == 1.25


def test_a_folded_answer_after_the_tool_counts_from_its_own_start() -> None:
    folded = [call("decision", 0.0, 2.0), call("after_tool", 3.0, 2.0, first=0.75)]
    assert after_tool_s(folded) == 0.75


def test_a_folded_call_that_called_again_counts_to_the_final_folded_answer() -> None:
    turns = [
        call("decision", 0.0, 2.0),
        call("after_tool", 3.0, 1.0, first=0.5),  # a second tool call
        call("after_tool", 5.0, 2.0, first=0.4),  # the answer
    ]
    assert after_tool_s(turns) == 0.4


def test_a_turn_without_a_tool_has_no_after_tool_figure() -> None:
    assert after_tool_s([call("decision", 0.0, 1.0), call("answer", 1.0, 1.0)]) is None


def test_run_figures_count_only_the_runs_own_calls() -> None:
    other = call("answer", 0.0, 9.0, run_id="r2")
    row = run_figures("r1", 6.5, [*TOOL_TURN, other])
    assert (row["model_s"], row["other_s"], row["model_calls"]) == (5.0, 1.5, 3)


def test_decode_rate_is_all_tokens_over_all_decode_time_and_acceptance_is_shown_when_drafted() -> (
    None
):
    kinds = by_kind(
        [
            call("decision", 0, 1, decoded=10, decode_ms=1000, drafted=8, accepted=6),
            call("decision", 2, 1, decoded=30, decode_ms=1000, drafted=12, accepted=4),
            call("structured", 0, 1, agent="critic"),
        ]
    )
    assert list(kinds) == ["critic.structured", "researcher.decision"]
    decision = kinds["researcher.decision"]
    assert (decision["calls"], decision["decode_tps"], decision["draft_acceptance"]) == (
        2,
        20.0,
        0.5,
    )
    assert "draft_acceptance" not in kinds["critic.structured"]


def test_summary_means_and_share_correct() -> None:
    runs = [
        {
            "status": "done",
            "correct": True,
            "total_s": 4.0,
            "model_s": 3.0,
            "other_s": 1.0,
            "after_tool_s": 1.0,
        },
        {
            "status": "failed",
            "correct": False,
            "total_s": 6.0,
            "model_s": 5.0,
            "other_s": 1.0,
            "after_tool_s": None,
        },
    ]
    s = summary(runs, 7.0)
    assert (s["correct"], s["not_done"], s["mean_total_s"], s["mean_after_tool_s"]) == (
        0.5,
        1,
        5.0,
        1.0,
    )
