"""The merge of a gather's branches: fusing the sources."""

from __future__ import annotations

from typing import Any

from agents.roles.gather import RRF_K, fuse


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
