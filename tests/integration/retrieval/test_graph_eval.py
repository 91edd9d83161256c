"""The shipped two-hop set: the graph puts both needed documents in front of the
researcher where a search for the question alone does not."""

from __future__ import annotations

from collections.abc import Callable

from agentbus_evals.graph_set import evaluate_graph, table
from api.compose.settings import AppSettings
from retrieval.embedders.hashing import HashingEmbedder


async def test_the_graph_finds_the_second_hop_the_documents_search_misses(
    make_settings: Callable[..., AppSettings],
) -> None:
    result = await evaluate_graph(make_settings(embedder="hashing"), embedder=HashingEmbedder())
    scores = {s.condition: s for s in result.scores}
    assert result.info["questions"] == 8 and result.info["facts_per_chunk"] > 1
    assert scores["graph"].both_found == 1.0, table(result)
    merged, alone = scores["documents+graph"], scores["documents@8"]
    assert merged.both_found > alone.both_found, table(result)
    assert merged.fact_recall >= scores["documents"].fact_recall, table(result)
