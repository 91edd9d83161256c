"""The knowledge graph's parts, from the settings: the ingest-side index and the walk.

``AGENTBUS_GRAPH_EXTRACTOR`` chooses how facts are extracted (``rules``; ``model``: the
chat model under a JSON schema, injected here because retrieval sits below agents;
``none``: no graph at all). The walk reads the SQL fact store every process opens.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrieval.graph.index import GraphIndex
from retrieval.graph.rules import RuleExtractor
from retrieval.graph.search import GraphConfig, GraphSearch

if TYPE_CHECKING:
    from agents.llm.ports import LLM
    from bus.store import Stores
    from retrieval.ports import FactExtractor
    from retrieval.settings import RetrievalSettings


def graph_search(settings: RetrievalSettings, stores: Stores) -> GraphSearch | None:
    """The graph walk (None when the graph is off or the store has no fact tables)."""
    if settings.graph_extractor == "none" or stores.facts is None:
        return None
    config = GraphConfig(hops=settings.graph_hops, top_k=settings.graph_top_k)
    return GraphSearch(stores.facts, config)


def graph_index(
    settings: RetrievalSettings, stores: Stores, llm: LLM | None = None
) -> GraphIndex | None:
    """What the retrieval role stores each batch's facts with (None: the graph is off)."""
    if settings.graph_extractor == "none" or stores.facts is None:
        return None
    extractor: FactExtractor = RuleExtractor()
    if settings.graph_extractor == "model" and llm is not None:
        from agents.fact_extractor import ModelExtractor

        extractor = ModelExtractor(llm)
    return GraphIndex(stores.facts, extractor)
