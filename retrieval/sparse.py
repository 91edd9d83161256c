"""The keyword side of hybrid search: a BM25-style sparse vector computed here.

Terms are lower-cased words (stop words dropped, a light plural/suffix fold), hashed to
32-bit indices. A document's weight per term is BM25's saturated term frequency with
length normalisation; the collection's sparse vector has Qdrant's IDF modifier, so Qdrant
multiplies in the inverse document frequency at query time. A query weighs each distinct
term 1.0, so its score is the BM25 sum over the terms it shares with a chunk.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from dataclasses import dataclass

#: BM25's usual constants.
K1 = 1.2
B = 0.75
#: Assumed average chunk length in terms (chunks are capped near 1,000 characters, so
#: lengths vary little and a fixed average avoids a corpus-wide pass before indexing).
AVG_TERMS = 100.0

_WORD = re.compile(r"[^\W_]+(?:['’.-][^\W_]+)*", re.UNICODE)
_STOP = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "for",
        "from", "has", "have", "he", "her", "his", "how", "i", "if", "in",
        "into", "is", "it", "its", "of", "on", "or", "our", "she", "so",
        "than", "that", "the", "their", "them", "then", "there", "these", "they", "this",
        "to", "was", "we", "were", "what", "when", "where", "which", "who", "why",
        "will", "with", "you", "your", "do", "does", "did", "can", "could", "would",
        "should", "not", "no", "yes", "about", "after", "before", "over", "under", "up",
        "down", "out", "off", "more", "most", "other", "some", "such", "only", "own",
        "same", "too", "very", "just", "also", "any", "each", "few", "all", "both",
        "been", "being", "am", "my", "me", "us",
    }
)  # fmt: skip


def _fold(word: str) -> str:
    # A tiny, predictable suffix fold so "streams"/"stream" and "indexes"/"index" meet;
    # a real stemmer would be more thorough but less obvious to debug.
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("ches", "shes", "sses", "xes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def terms(text: str) -> list[str]:
    """The text's index terms, in order (duplicates kept)."""
    out: list[str] = []
    for match in _WORD.finditer(text.lower()):
        word = match.group().replace("’", "'").strip(".'-")
        if word.endswith("'s"):
            word = word[:-2]
        if word and word not in _STOP:
            out.append(_fold(word))
    return out


def term_index(term: str) -> int:
    """A term's sparse index (CRC-32: stable across processes and versions)."""
    return zlib.crc32(term.encode("utf-8"))


@dataclass(frozen=True, slots=True)
class SparseVec:
    """Indices and weights of a sparse vector (indices unique, sorted)."""

    indices: list[int]
    values: list[float]

    @property
    def empty(self) -> bool:
        """True when no term survived tokenising."""
        return not self.indices


def _vector(weights: dict[int, float]) -> SparseVec:
    ordered = sorted(weights.items())
    return SparseVec([i for i, _ in ordered], [w for _, w in ordered])


def document_vector(text: str) -> SparseVec:
    """BM25 term-frequency weights of a chunk (IDF is applied by Qdrant)."""
    found = terms(text)
    length_norm = 1 - B + B * (len(found) / AVG_TERMS)
    weights: dict[int, float] = {}
    for term, tf in Counter(found).items():
        index = term_index(term)
        # Two terms hashing to one index (rare at 2**32) simply add up.
        weights[index] = weights.get(index, 0.0) + tf * (K1 + 1) / (tf + K1 * length_norm)
    return _vector(weights)


def query_vector(text: str) -> SparseVec:
    """Weight 1.0 per distinct query term."""
    return _vector({term_index(t): 1.0 for t in set(terms(text))})
