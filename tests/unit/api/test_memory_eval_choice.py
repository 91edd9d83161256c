"""Which statements of the memory set a run reads: a half, and all, those to keep or the
negatives, languages in turn."""

from __future__ import annotations

from agentbus_evals.memory_runs import chosen
from agentbus_evals.memory_set import load_memory_set


def test_negatives_are_the_statements_of_the_half_with_nothing_to_keep() -> None:
    shipped = load_memory_set()
    negatives = chosen(shipped, "test", "negatives")
    assert negatives and all(c.half == "test" and not c.facts for c in negatives)
    keep = chosen(shipped, "test", "keep")
    assert keep and all(c.half == "test" and c.facts for c in keep)
    every = chosen(shipped, "test")
    assert sorted(c.id for c in every) == sorted(c.id for c in [*keep, *negatives])


def test_the_chosen_statements_take_the_languages_in_turn() -> None:
    negatives = chosen(load_memory_set(), "test", "negatives")
    assert len({c.lang for c in negatives[:5]}) == 5


def test_a_limited_run_has_statements_to_keep_and_negatives_of_every_language() -> None:
    first = chosen(load_memory_set(), "dev")[:10]
    assert len({c.lang for c in first}) == 5
    assert any(c.facts for c in first) and any(not c.facts for c in first)
