"""When a conversation's history is folded into a summary, and where: the budget, whole
turns only, the boundaries."""

from __future__ import annotations

import pytest

from agents.context_budget import (
    ANSWER_TOKENS,
    MIN_BUDGET,
    SUMMARY_TOKENS,
    chunks,
    clip,
    estimate_tokens,
    history_budget,
    plan_fold,
)
from agents.settings import AgentSettings

Q, A = True, False  # a message that starts a turn (a question), one that does not


def turns(n: int, size: int = 100) -> tuple[list[int], list[bool]]:
    """``n`` question-answer turns, every message ``size`` tokens."""
    return [size] * (2 * n), [Q, A] * n


def test_an_estimate_is_at_least_the_characters_over_three_plus_the_template() -> None:
    assert estimate_tokens("") == 4
    assert estimate_tokens("x" * 300) == 104
    assert estimate_tokens("x" * 301) == 105


def test_the_budget_is_half_what_the_window_leaves_after_the_fixed_parts_and_the_answer() -> None:
    assert history_budget(8192, fixed=1000) == (8192 - 1000 - ANSWER_TOKENS) // 2
    assert history_budget(32_768, fixed=1000) > history_budget(8192, fixed=1000)


def test_the_budget_never_falls_below_its_floor_however_small_the_window() -> None:
    assert history_budget(1024, fixed=5000) == MIN_BUDGET


def test_a_summary_of_the_longest_length_fits_half_the_smallest_budget() -> None:
    # Otherwise a fold could leave the history over budget, and every turn would fold.
    longest = estimate_tokens("x" * 4 * SUMMARY_TOKENS)  # four characters a token, written
    assert longest <= MIN_BUDGET // 2


def test_nothing_is_folded_while_the_history_fits() -> None:
    sizes, starts = turns(5)
    assert plan_fold(sizes, starts, summary_tokens=0, budget=1000, max_messages=20) == 0
    assert plan_fold(sizes, starts, summary_tokens=0, budget=999, max_messages=20) > 0


def test_the_summary_counts_against_the_budget() -> None:
    sizes, starts = turns(4)
    assert plan_fold(sizes, starts, summary_tokens=200, budget=1000, max_messages=20) == 0
    assert plan_fold(sizes, starts, summary_tokens=201, budget=1000, max_messages=20) > 0


def test_too_many_messages_fold_even_when_they_are_small() -> None:
    sizes, starts = turns(11, size=5)
    fold = plan_fold(sizes, starts, summary_tokens=0, budget=10_000, max_messages=20)
    assert fold == 22 - 10  # half of max_messages kept: the last five turns


def test_a_fold_keeps_whole_turns_within_half_the_budget() -> None:
    sizes, starts = turns(10)
    fold = plan_fold(sizes, starts, summary_tokens=0, budget=1000, max_messages=100)
    kept = sizes[fold:]
    assert starts[fold] is Q  # the kept part starts with a question
    assert sum(kept) <= 500
    assert fold == 20 - 4  # two turns of 200 tokens fit 500; a third would not


def test_the_kept_part_never_starts_with_an_answer() -> None:
    # An odd tail: a question, then a long answer and two short messages.
    sizes = [100, 100, 50, 400, 10, 10]
    starts = [Q, A, Q, A, Q, A]
    fold = plan_fold(sizes, starts, summary_tokens=0, budget=600, max_messages=100)
    assert starts[fold] is Q
    assert fold == 4  # 10 + 10 fit 300; the 400-token answer does not, nor its question


def test_when_no_whole_turn_fits_everything_is_folded() -> None:
    sizes, starts = [50, 2000], [Q, A]  # one turn whose answer is bigger than the budget
    assert plan_fold(sizes, starts, summary_tokens=0, budget=1024, max_messages=20) == 2


def test_a_question_without_its_answer_yet_is_a_turn_of_its_own() -> None:
    # An interrupted run can leave a question as the branch's last message.
    sizes, starts = [600, 600, 100], [Q, A, Q]
    assert plan_fold(sizes, starts, summary_tokens=0, budget=1000, max_messages=20) == 2


def test_the_decision_needs_one_flag_per_message() -> None:
    with pytest.raises(ValueError, match="one entry per message"):
        plan_fold([1, 2], [Q], summary_tokens=0, budget=10, max_messages=2)


def test_chunks_cut_between_messages_and_never_exceed_the_limit_but_for_one_big_message() -> None:
    assert chunks([100, 100, 100, 100], [Q, A, Q, A], 250) == [2, 4]
    assert chunks([100, 300, 100], [Q, A, Q], 250) == [1, 2, 3]  # the 300 is a group alone
    assert chunks([], [], 250) == []
    assert chunks([10], [Q], 250) == [1]


def test_chunks_end_before_a_question_where_they_can() -> None:
    assert chunks([100] * 6, [Q, A] * 3, 350) == [2, 4, 6]  # not [3, 6]: whole turns
    # No question to end before: the group ends where the limit is.
    assert chunks([100] * 4, [Q, A, A, A], 250) == [2, 4]


def test_clip_keeps_the_start_and_the_end_of_a_long_text_and_says_what_it_left_out() -> None:
    text = "START " + "x" * 10_000 + " END"
    clipped = clip(text, 100)
    assert clipped.startswith("START") and clipped.endswith("END")
    assert "characters left out" in clipped and len(clipped) < 400
    assert clip("short", 100) == "short"


def test_the_window_is_the_local_models_n_ctx_or_the_configured_one() -> None:
    assert AgentSettings(llm="local", llm_context_tokens=4096).context_window() == 4096
    # The local model's window is what it was loaded with, whatever else is configured.
    local = AgentSettings(llm="local", llm_context_tokens=4096, llm_context_window=65_536)
    assert local.context_window() == 4096
    remote = AgentSettings(llm="openai", llm_context_window=131_072)
    assert remote.context_window() == 131_072
    assert AgentSettings(llm="openai", llm_context_tokens=8192).context_window() == 8192
