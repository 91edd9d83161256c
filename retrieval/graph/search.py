"""The query side of the knowledge graph: from the entities a question names, one or two
hops through the facts, to the chunks those facts came from.

Matching is exact on normalised keys (`retrieval.graph.entities.question_keys`: the
question's names and every 1-5 word n-gram, so case and articles do not matter). Hop one
reads the facts that name a matched entity; hop two the facts that name the entities at
their other ends (names only: a year or an amount links too much to walk through). A
chunk scores by the facts that reached it (a hop-two fact counts half, a fact matched on
a longer name more, one matched on a name many facts share less), and each passage shows
its chunk with those facts first. The ACL filter is inside each read
(`bus.store.facts.FactStore.find`): a fact of a document the caller may not read is never
returned, nor walked through.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from bus.store.facts import FactStore, StoredFact, Triple
from retrieval.graph.entities import question_keys
from retrieval.models import Access

#: Facts shown at the head of a passage.
FACTS_SHOWN = 6


@dataclass(frozen=True, slots=True)
class GraphConfig:
    """How far and how wide a graph query goes."""

    hops: int = 2
    top_k: int = 5
    facts_per_hop: int = 200


@dataclass(frozen=True, slots=True)
class GraphPassage:
    """A chunk some matched facts came from, with those facts (best first)."""

    id: str
    source: str
    title: str
    heading: str
    chunk_text: str
    facts: tuple[Triple, ...]
    score: float

    @property
    def text(self) -> str:
        """What the model reads: the facts, then the chunk they came from."""
        lines = "; ".join(f"{f.subject} — {f.relation} — {f.object}" for f in self.facts)
        return f"Facts: {lines}\n{self.chunk_text}"

    def item(self) -> dict[str, Any]:
        """As a gather source's item (``{id, source, title, heading, text}``)."""
        return {
            "id": self.id,
            "source": self.source,
            "title": self.title,
            "heading": self.heading,
            "text": self.text,
        }


def _weight(key: str) -> float:
    """A match on a longer name says more than one on a single word."""
    return min(1.0, 0.4 + 0.2 * len(key.split()))


class GraphSearch:
    """Walks a tenant's facts for a question, as one caller (tenant and groups).

    Args:
        facts: the SQL fact store.
        config: hops (1 or 2), passages returned, facts read per hop.
    """

    def __init__(self, facts: FactStore, config: GraphConfig | None = None) -> None:
        self.facts = facts
        self.config = config or GraphConfig()

    async def search(
        self, query: str, access: Access, *, top_k: int | None = None
    ) -> list[GraphPassage]:
        """The best ``top_k`` passages for ``query`` that ``access`` may read."""
        cfg = self.config
        keys = question_keys(query)
        tenant, groups = access.tenant, access.groups
        first = await self.facts.find(tenant, groups, keys, limit=cfg.facts_per_hop)
        degree: Counter[str] = Counter()
        for fact in first:
            t = fact.triple
            degree.update({k for k in (t.subject_key, t.object_key) if k in keys})
        scored: dict[StoredFact, float] = {}
        frontier: dict[str, float] = {}
        for fact in first:
            t = fact.triple
            matched = [k for k in (t.subject_key, t.object_key) if k in keys]
            # A name in many facts (the company everyone joined) says little about any one.
            weights = [_weight(k) / math.sqrt(degree[k]) for k in matched]
            scored[fact] = max(weights) + 0.25 * (len(matched) - 1)
            for key, kind in ((t.subject_key, t.subject_kind), (t.object_key, t.object_kind)):
                if key not in keys and kind == "name":
                    frontier[key] = max(frontier.get(key, 0.0), scored[fact])
        if cfg.hops >= 2 and frontier:
            second = await self.facts.find(tenant, groups, frontier, limit=cfg.facts_per_hop)
            for fact in second:
                if fact in scored:
                    continue
                t = fact.triple
                via = max(frontier.get(t.subject_key, 0.0), frontier.get(t.object_key, 0.0))
                scored[fact] = 0.5 * via
        return await self._passages(tenant, scored, top_k or cfg.top_k)

    async def _passages(
        self, tenant: str, scored: dict[StoredFact, float], top_k: int
    ) -> list[GraphPassage]:
        by_chunk: dict[tuple[str, str], list[tuple[float, Triple]]] = defaultdict(list)
        for fact, score in scored.items():
            by_chunk[(fact.chunk_id, fact.version)].append((score, fact.triple))
        ranked = sorted(
            by_chunk.items(), key=lambda kv: (-sum(s for s, _ in kv[1]), kv[0][0], kv[0][1])
        )
        chosen: list[tuple[tuple[str, str], list[tuple[float, Triple]]]] = []
        seen: set[str] = set()
        for ref, facts in ranked:  # one passage per chunk, whichever version is stored
            if ref[0] not in seen:
                seen.add(ref[0])
                chosen.append((ref, facts))
            if len(chosen) >= top_k:
                break
        chunks = await self.facts.chunks(tenant, [ref for ref, _ in chosen])
        passages: list[GraphPassage] = []
        for ref, facts in chosen:
            chunk = chunks.get(ref)
            if chunk is None:  # dropped between the two reads (a new version finished)
                continue
            best = sorted(facts, key=lambda st: -st[0])[:FACTS_SHOWN]
            passages.append(
                GraphPassage(
                    id=chunk.chunk_id,
                    source=chunk.source,
                    title=chunk.title,
                    heading=chunk.heading,
                    chunk_text=chunk.text,
                    facts=tuple(t for _, t in best),
                    score=sum(s for s, _ in facts),
                )
            )
        return passages
