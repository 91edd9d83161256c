"""Rerank with the ``nanoranker`` package (ONNX, offline, MIT): ~570 pairs/s on 2 cores.

The package loads its two ONNX models when imported, so the import happens on first use,
in a worker thread, and only once.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Protocol, cast

from retrieval.errors import RerankerUnavailable
from retrieval.ingest import indexed_text
from retrieval.models import Hit

RankFn = Callable[..., list[tuple[str, float]]]


class _Nanoranker(Protocol):
    # The package's entry point, typed (its own signature leaves the texts' type unknown).
    def rank(
        self, query: str, documents: list[str], top_n: int = 10, normalize_scores: bool = True
    ) -> list[tuple[str, float]]: ...


class NanoReranker:
    """Scores each (query, chunk) pair with nanoranker's cross-feature model."""

    def __init__(self) -> None:
        self._rank: RankFn | None = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """``nanoranker``."""
        return "nanoranker"

    def _load(self) -> RankFn:
        if self._rank is None:
            try:
                import nanoranker
            except Exception as e:  # ImportError, or onnxruntime failing to load the models
                raise RerankerUnavailable(f"nanoranker could not be loaded: {e!r}") from e
            self._rank = cast("_Nanoranker", nanoranker).rank
        return self._rank

    def _scores(self, query: str, texts: list[str]) -> list[float]:
        with self._lock:
            rank = self._load()
            ranked: list[tuple[Any, float]] = rank(
                query, texts, top_n=len(texts), normalize_scores=False
            )
        # rank() returns (text, score) sorted by score; map back by text, duplicates in order.
        by_text: dict[str, list[float]] = {}
        for text, score in ranked:
            by_text.setdefault(str(text), []).append(float(score))
        return [by_text[t].pop() for t in texts]

    async def rerank(self, query: str, hits: Sequence[Hit], top_k: int) -> list[Hit]:
        """The ``top_k`` hits nanoranker scores highest."""
        if not hits:
            return []
        texts = [indexed_text(h.chunk.title, h.chunk.heading, h.chunk.text) for h in hits]
        scores = await asyncio.to_thread(self._scores, query, texts)
        rescored = [
            replace(h, score=s, scores={**h.scores, "rerank": s})
            for h, s in zip(hits, scores, strict=True)
        ]
        rescored.sort(key=lambda h: h.score, reverse=True)
        return rescored[:top_k]
