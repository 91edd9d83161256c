"""The no-op reranker: keeps the fused order."""

from __future__ import annotations

from collections.abc import Sequence

from retrieval.models import Hit


class NoopReranker:
    """Returns the first ``top_k`` hits unchanged."""

    @property
    def name(self) -> str:
        """``none``."""
        return "none"

    async def rerank(self, query: str, hits: Sequence[Hit], top_k: int) -> list[Hit]:
        """The first ``top_k`` hits."""
        return list(hits[:top_k])
