"""`agentbus bench conversation`: one conversation through the whole system, reported per
bucket of turns. A few turns and a small window, so it folds; the figures are not checked
(speed is for the benchmark itself), only that every turn ended ``done`` and the report
says what the model was given."""

from __future__ import annotations

import json

import pytest

from tests.processes import cli


@pytest.mark.timeout(300)
async def test_a_short_conversation_folds_and_reports_each_bucket() -> None:
    out = await cli(
        ["bench", "conversation", "--turns", "16", "--every", "4", "--window", "2048", "--json"],
        {"AGENTBUS_LOG_LEVEL": "warning"},
    )

    report = json.loads(out.strip().splitlines()[-1])
    assert [b["turns"] for b in report["buckets"]] == ["1-4", "5-8", "9-12", "13-16"]
    assert all(b["not_done"] == 0 for b in report["buckets"])
    assert report["window_tokens"] == 2048 and report["summaries"] >= 1
    assert report["last_turn"]["researcher_est_tokens"] > 0
    # The scripted summarizer keeps the oldest words: turn 3's fact is among them.
    assert report["newest_summary"]["holds_fact"] is True
