"""Pure parts of the critic and the merge: reading a critique, fusing the sources."""

from __future__ import annotations

from typing import Any

import pytest

from agents.checks.verdicts import parse_critique
from agents.roles.gather import RRF_K, fuse


@pytest.mark.parametrize(
    ("reply", "verdict", "reason"),
    [
        ('{"verdict": "OK", "reason": "437 is right"}', "OK", "437 is right"),
        ('```json\n{"verdict": "REVISE", "reason": "no working"}\n```', "REVISE", "no working"),
        ('{"verdict": "replan", "reason": "wrong approach"}', "REPLAN", "wrong approach"),
        # Servers that honour no schema: one leading verdict word still reads.
        ("OK the tool result supports it.", "OK", "the tool result supports it."),
        ("revise: show the working", "REVISE", "show the working"),
        ("  **REPLAN** the plan missed a step", "REPLAN", "** the plan missed a step"),
        ("REVISE", "REVISE", ""),
    ],
)
def test_a_critique_is_a_verdict_and_a_reason(reply: str, verdict: str, reason: str) -> None:
    assert parse_critique(reply) == (verdict, reason)


@pytest.mark.parametrize(
    "reply",
    [
        # The prompt's own instruction read back (issue 28): two verdicts named, not an OK.
        "OK if the answer is correct and supported, REVISE if the plan was sound but ...",
        "Looks right to me.",
        "OKAY, fine",
        "Revised answer is wrong",
        '{"verdict": "maybe", "reason": "?"}',
        "",
    ],
)
def test_an_unreadable_critique_is_unknown_never_ok(reply: str) -> None:
    verdict, reason = parse_critique(reply)
    assert verdict == "UNKNOWN"
    assert reply.strip()[:20] in reason


def _items(source: str, n: int, text: str = "x") -> list[dict[str, Any]]:
    return [{"id": f"{source}-{i}", "source": f"{source}/{i}", "text": text} for i in range(n)]


def test_fusion_interleaves_sources_by_rank_and_numbers_the_result() -> None:
    fused = fuse({"documents": _items("d", 3), "web": _items("w", 2)}, 10_000, 10)
    assert [e.id for e in fused] == ["d-0", "w-0", "d-1", "w-1", "d-2"]
    assert [e.ref for e in fused] == [1, 2, 3, 4, 5]
    assert [e.source_kind for e in fused[:2]] == ["documents", "web"]
    assert RRF_K == 60  # rank r scores 1 / (60 + r + 1) in every source


def test_fusion_keeps_top_k_and_each_sources_text_budget() -> None:
    branches = {"documents": _items("d", 5, text="a" * 400), "web": _items("w", 5)}
    fused = fuse(branches, 1000, 4)
    assert [e.id for e in fused] == ["d-0", "w-0", "d-1", "w-1"]
    budgeted = fuse(branches, 1000, 20)
    assert [e.id for e in budgeted if e.source_kind == "documents"] == ["d-0", "d-1"]
    # A first item longer than the budget is still taken, so no source counts as empty.
    assert [e.id for e in fuse({"documents": _items("d", 2, "b" * 5000)}, 1000, 5)] == ["d-0"]


def test_fused_items_carry_the_known_fields_and_drop_the_rest() -> None:
    item = {"id": 7, "source": "a.md", "title": "A", "heading": "H", "text": "t", "score": 0.9}
    [evidence] = fuse({"documents": [item], "memory": []}, 100, 5)
    assert evidence.model_dump() == {
        "ref": 1,
        "source_kind": "documents",
        "id": "7",
        "source": "a.md",
        "title": "A",
        "heading": "H",
        "text": "t",
    }
    assert fuse({}, 100, 5) == []
