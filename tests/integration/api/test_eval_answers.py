"""`agentbus eval answers` through the whole system, with the scripted reference model."""

from __future__ import annotations

from pathlib import Path

import pytest

from api.evals.answer_runs import reference_model
from api.evals.answer_set import load_set, run_set, summary
from tests.conftest import TEST_REDIS_URL, real_client


@pytest.mark.timeout(180)
async def test_a_scripted_run_calls_the_tools_and_scores_the_answers(tmp_path: Path) -> None:
    shipped = load_set()
    # One question of each kind: the calculator, current_time on the set's clock (Auckland is
    # already on the next day), and search_docs over the ingested documents.
    chosen = [q for q in shipped.questions if q.id in ("a02", "d04", "k07")]
    answer_set = shipped.model_copy(update={"questions": chosen})
    async with real_client():  # flushes the test DB before and after
        outcomes = await run_set(
            reference_model(answer_set),
            answer_set,
            overrides={"redis_url": TEST_REDIS_URL, "read_block_ms": 20},
            deadline_s=60,
        )
    assert [(o.id, o.status, o.tools) for o in outcomes] == [
        ("a02", "done", ["calculator"]),
        ("d04", "done", ["current_time"]),
        ("k07", "done", ["search_docs"]),
    ]
    assert "7006652" in outcomes[0].answer  # the gateway's calculator result
    assert "2026-03-11" in outcomes[1].answer  # the fixed "today", in Auckland
    assert "6543" in outcomes[2].answer  # found in the ingested document
    row = summary("scripted", outcomes)
    assert (row["correct"], row["tool_choice"], row["errors"]) == (1.0, 1.0, 0)
