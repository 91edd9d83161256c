"""A model-free embedder: signed feature hashing of words and word pairs, L2-normalised.

Deterministic and ~100x faster than a neural model, with no semantics beyond shared
words. It is for tests, for the fake embeddings server, and for the ingest benchmark when
asked (the benchmark prints which embedder it used); never a production choice.
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Sequence

import numpy as np

from retrieval.sparse import terms


class HashingEmbedder:
    """Bag of words (and adjacent pairs) hashed into ``dim`` signed buckets.

    Args:
        dim: vector size.
    """

    def __init__(self, dim: int = 384) -> None:
        self._dim = dim

    @property
    def name(self) -> str:
        """Model id (includes the size: different sizes are different models)."""
        return f"hashing-{self._dim}"

    @property
    def dim(self) -> int:
        """Vector size."""
        return self._dim

    def vector(self, text: str) -> list[float]:
        """The vector of one text (synchronous; used by the fake server too)."""
        vec = np.zeros(self._dim, dtype=np.float64)
        words = terms(text)
        features = [*words, *(f"{a} {b}" for a, b in itertools.pairwise(words))]
        for feature in features:
            h = zlib.crc32(feature.encode("utf-8"))
            vec[h % self._dim] += 1.0 if (h >> 31) & 1 == 0 else -1.0
        norm = float(np.linalg.norm(vec))
        if norm == 0.0:
            vec[0] = 1.0  # an empty text still gets a valid unit vector
            norm = 1.0
        return (vec / norm).tolist()

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector per text, in order."""
        return [self.vector(t) for t in texts]

    async def embed_query(self, text: str) -> list[float]:
        """The query's vector."""
        return self.vector(text)
