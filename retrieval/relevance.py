"""Whether a passage is about a question: the test single mode's unasked context passes.

Two signals, either of which is enough:

* **meaning**: the cosine similarity of the question's and the passage's embeddings, on a
  scale that is the embedder's own (so a floor is measured per embedder, `FLOORS`);
* **words**: the share of the question's index terms (`retrieval.sparse.terms`: the
  keyword index's own words, stop words dropped) that the passage holds, with at least
  `MIN_SHARED` of them, for a passage phrased unlike the question ("Within how many days
  must expense reports be filed?" is 0.14 from its passage by meaning).

Both are on scales that do not move with the collection. The keyword floor this replaces
was a BM25 score, whose IDF grows with the number of chunks: measured on three documents,
a score of 3 took three shared words; over the nineteen of ``context_eval.json`` one rare
shared word scores 5 ("Who is the chancellor of Germany?" got the travel policy, "How do I
read a file line by line in Python?" the deployment guide).
"""

from __future__ import annotations

from dataclasses import dataclass

from retrieval.embedders.local_onnx import MODEL_NAME as MINILM
from retrieval.models import Hit
from retrieval.sparse import terms

#: Words a question and a passage must share before their share counts: one shared word is
#: chance ("time" in "What time is it in Tokyo?" and "19:00 ... closing time").
MIN_SHARED = 2


@dataclass(frozen=True, slots=True)
class RelevanceFloor:
    """What a passage must reach, by meaning or by words, to be context for a question.

    Attributes:
        similarity: the least cosine similarity of question and passage; None where the
            embedder's scale was not measured (then words alone decide).
        coverage: the least share of the question's terms the passage holds (with at least
            `MIN_SHARED` of them).
    """

    similarity: float | None
    coverage: float

    def keeps(self, question: str, hit: Hit, similarity: float | None) -> bool:
        """True when ``hit`` is about ``question`` (``similarity``: their cosine, if known)."""
        floor = self.similarity
        if floor is not None and similarity is not None and similarity >= floor:
            return True
        return term_coverage(question, passage_text(hit)) >= self.coverage


def passage_text(hit: Hit) -> str:
    """What a passage says, as the keyword index reads it: title, heading and text."""
    chunk = hit.chunk
    return " ".join(p for p in (chunk.title, chunk.heading, chunk.text) if p)


def term_coverage(question: str, passage: str) -> float:
    """The share of the question's distinct terms the passage holds; 0 when they share
    fewer than `MIN_SHARED`."""
    asked = set(terms(question))
    shared = asked & set(terms(passage))
    if len(shared) < MIN_SHARED:
        return 0.0
    return len(shared) / len(asked)


#: Words alone: for an embedder whose similarities nobody measured here.
WORDS_ONLY = RelevanceFloor(similarity=None, coverage=0.58)

#: The floor per embedder, calibrated on the ``dev`` half of ``api/evals/src/agentbus_evals/data/
#: context_eval.json`` (`agentbus_evals.context_set.calibrate`: midway between the most an
#: unrelated question reached and the least a related one reached above it). MiniLM: the
#: unrelated questions' best passage at most 0.36 by meaning and 0.5 by words; the related
#: ones' least above those 0.40 and 0.67. Test-half figures: docs/architecture.md.
FLOORS: dict[str, RelevanceFloor] = {MINILM: RelevanceFloor(similarity=0.38, coverage=0.58)}


def floor_for(embedder: str) -> RelevanceFloor:
    """The embedder's floor, or `WORDS_ONLY`."""
    return FLOORS.get(embedder, WORDS_ONLY)
