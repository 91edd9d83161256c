"""Ranking metrics over document ids (binary relevance)."""

from __future__ import annotations

import math
from collections.abc import Sequence


def recall_at(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    """Share of the relevant documents found in the first ``k``."""
    if not relevant:
        return 0.0
    return len(set(ranked[:k]) & relevant) / len(relevant)


def mrr_at(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    """1 / rank of the first relevant document within ``k`` (0 if none)."""
    for rank, doc in enumerate(ranked[:k], 1):
        if doc in relevant:
            return 1.0 / rank
    return 0.0


def ndcg_at(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    """Normalised discounted cumulative gain with binary gains."""
    dcg = sum(1.0 / math.log2(i + 2) for i, doc in enumerate(ranked[:k]) if doc in relevant)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(k, len(relevant))))
    return dcg / ideal if ideal else 0.0


def distinct(doc_ids: Sequence[str]) -> list[str]:
    """Document ids in first-seen order (several chunks of one document count once)."""
    seen: dict[str, None] = {}
    for doc in doc_ids:
        seen.setdefault(doc, None)
    return list(seen)
