"""The contract every embedder adapter passes (subclass and provide an ``embedder`` fixture)."""

from __future__ import annotations

import math

import pytest

from retrieval.ports import Embedder

TEXTS = [
    "The cat sat on the mat.",
    "A cat was sitting on the mat.",
    "Quarterly tax filings are due in April.",
]


def _cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


class EmbedderContract:
    """Shared tests: shape, unit norm, order, determinism, query/document agreement."""

    @pytest.fixture
    def embedder(self) -> Embedder:
        raise NotImplementedError

    def test_is_an_embedder_with_a_name_and_size(self, embedder: Embedder) -> None:
        assert isinstance(embedder, Embedder)
        assert embedder.name and embedder.dim > 0

    async def test_one_unit_vector_per_text_of_the_declared_size(self, embedder: Embedder) -> None:
        vectors = await embedder.embed(TEXTS)
        assert len(vectors) == len(TEXTS)
        for v in vectors:
            assert len(v) == embedder.dim
            assert all(isinstance(x, float) and math.isfinite(x) for x in v)
            assert math.isclose(math.sqrt(sum(x * x for x in v)), 1.0, rel_tol=1e-4)

    async def test_empty_input_gives_no_vectors(self, embedder: Embedder) -> None:
        assert await embedder.embed([]) == []

    async def test_batching_keeps_order_and_values(self, embedder: Embedder) -> None:
        together = await embedder.embed(TEXTS)
        alone = [(await embedder.embed([t]))[0] for t in TEXTS]
        for a, b in zip(together, alone, strict=True):
            assert _cos(a, b) > 0.999

    async def test_deterministic_and_query_matches_document(self, embedder: Embedder) -> None:
        first = await embedder.embed(TEXTS[:1])
        again = await embedder.embed(TEXTS[:1])
        query = await embedder.embed_query(TEXTS[0])
        assert _cos(first[0], again[0]) > 0.9999
        assert _cos(first[0], query) > 0.999

    async def test_related_texts_are_closer_than_unrelated(self, embedder: Embedder) -> None:
        cat, kitten, tax = await embedder.embed(TEXTS)
        assert _cos(cat, kitten) > _cos(cat, tax)

    async def test_many_texts_in_several_batches(self, embedder: Embedder) -> None:
        texts = [f"note number {i} about streams" for i in range(130)]
        vectors = await embedder.embed(texts)
        assert len(vectors) == 130
        assert _cos(vectors[5], (await embedder.embed([texts[5]]))[0]) > 0.999
