"""Ports of retrieval: the embedder and the reranker (one adapter per file under
``retrieval/embedders/`` and ``retrieval/rerankers/``; every embedder passes the same
contract suite in ``tests/unit/retrieval/embedder_contract.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from retrieval.models import Hit


@runtime_checkable
class Embedder(Protocol):
    """Turns text into dense vectors of a fixed size, L2-normalised."""

    @property
    def name(self) -> str:
        """Model id, recorded so a collection is never mixed across embedders."""
        ...

    @property
    def dim(self) -> int:
        """Vector size."""
        ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order (documents; batched inside the adapter).

        Raises:
            EmbedderUnavailable: the model cannot be loaded.
            EmbedderFailed: the call failed or returned vectors of the wrong size.
        """
        ...

    async def embed_query(self, text: str) -> list[float]:
        """The vector of a search query."""
        ...


@runtime_checkable
class Reranker(Protocol):
    """Reorders fused candidates by relevance to the query."""

    @property
    def name(self) -> str:
        """Reranker id (``none`` for the no-op)."""
        ...

    async def rerank(self, query: str, hits: Sequence[Hit], top_k: int) -> list[Hit]:
        """The best ``top_k`` of ``hits`` for ``query``, best first.

        Raises:
            RerankerUnavailable: the model cannot be loaded.
        """
        ...
