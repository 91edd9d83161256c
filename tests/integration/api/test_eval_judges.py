"""`agentbus eval judges` on the real bus with the scripted reference judge (a per-kind sample)."""

from __future__ import annotations

import pytest

from agentbus_evals.judge_runs import reference_judge
from agentbus_evals.judge_set import judge_summary, load_judge_set, run_judges, triples
from tests.conftest import TEST_REDIS_URL, real_client


@pytest.mark.timeout(300)
async def test_the_fact_check_catches_wrong_drafts_of_every_kind_and_passes_right_ones() -> None:
    judge_set = load_judge_set()
    chosen = triples(judge_set, per_kind=2)
    kinds = {t.kind for t in chosen}
    assert kinds == {"right", "wrong_number", "not_in_evidence", "wrong_entity", "missing_caveat"}
    async with real_client():  # flushes the test DB before and after
        outcomes = await run_judges(
            reference_judge(judge_set),
            judge_set,
            chosen,
            overrides={"redis_url": TEST_REDIS_URL, "read_block_ms": 20},
            deadline_s=60,
        )
    assert len(outcomes) == 2 * len(chosen)  # each triple, by the critic and the verifier
    by = {(o.case, o.kind, o.judge): o for o in outcomes}
    # The reference approves whatever it reads: what it catches, the fact-check caught:
    # a wrong number recomputed through the gateway; a figure, claim or name the evidence
    # does not hold there, or a limit it drops (grounding by string match).
    caught = {"wrong_number", "not_in_evidence", "wrong_entity", "missing_caveat"}
    for t in chosen:
        for judge in ("critic", "verifier"):
            o = by[(t.case.id, t.kind, judge)]
            assert o.flagged == (t.kind in caught), (o, t.draft)
            assert o.verified is (t.kind not in caught), o
            if t.kind == "wrong_number":
                assert "recomputed" in o.reason
            if t.kind in ("not_in_evidence", "wrong_entity", "missing_caveat"):
                assert "evidence" in o.reason
    row = judge_summary("scripted", outcomes)
    for judge in ("critic", "verifier"):
        rates = row["judges"][judge]
        assert rates["false_alarm"] == 0.0 and rates["unknown"] == 0
        assert rates["catch_by_kind"]["wrong_number"] == "2/2"
        assert rates["catch_by_kind"]["not_in_evidence"] == "2/2"
        assert rates["catch_by_kind"]["wrong_entity"] == "2/2"
        assert rates["catch_by_kind"]["missing_caveat"] == "2/2"
