"""The knowledge graph's parts, from the settings: the ingest-side index and the walk.

``AGENTBUS_GRAPH_EXTRACTOR`` chooses how facts are extracted: ``auto`` (the default: the
chat model under a JSON schema when its extraction was measured better than the rules',
`MEASURED_BETTER`, else the rules), ``model``, ``rules``, or ``none`` (no graph at all).
The model extractor is injected here because retrieval sits below agents. Every choice
comes with the sentence that says which extractor runs and why, which ``agentbus ingest``
prints and the retrieval role logs: nothing falls back without saying so. The walk reads
the SQL fact store every process opens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from agents.understanding.fact_extractor import ModelExtractor
from retrieval.graph.index import GraphIndex
from retrieval.graph.rules import RuleExtractor
from retrieval.graph.search import GraphConfig, GraphSearch

if TYPE_CHECKING:
    from agents.llm.ports import LLM
    from bus.store import Stores
    from retrieval.ports import FactExtractor
    from retrieval.settings import RetrievalSettings

#: The chat models whose facts a reader agreed with more often than the rules' on the
#: test half of the fact set (`agentbus eval facts`; figures in docs/evals.md).
MEASURED_BETTER: frozenset[str] = frozenset({"local:qwen2.5-coder-1.5b-instruct-q4_k_m"})


@dataclass(frozen=True, slots=True)
class ExtractorChoice:
    """The extractor that runs at ingest and the sentence saying which and why."""

    extractor: FactExtractor
    reason: str

    @property
    def label(self) -> str:
        """``rules`` or ``model (<model name>)``."""
        if isinstance(self.extractor, ModelExtractor):
            return f"model ({self.extractor.model})"
        return self.extractor.name


def choose_extractor(settings: RetrievalSettings, llm: LLM | None) -> ExtractorChoice:
    """The fact extractor the settings and the chat model call for, with why."""
    mode = settings.graph_extractor
    if mode == "rules":
        return ExtractorChoice(RuleExtractor(), "AGENTBUS_GRAPH_EXTRACTOR=rules")
    if llm is None:
        return ExtractorChoice(RuleExtractor(), "no chat model is configured in this process")
    if mode == "model":
        return ExtractorChoice(ModelExtractor(llm), "AGENTBUS_GRAPH_EXTRACTOR=model")
    if llm.name in MEASURED_BETTER:
        return ExtractorChoice(
            ModelExtractor(llm), f"{llm.name} extracts facts better than the rules (measured)"
        )
    return ExtractorChoice(
        RuleExtractor(),
        f"{llm.name}'s facts were not measured better than the rules' "
        "(AGENTBUS_GRAPH_EXTRACTOR=model uses it all the same)",
    )


def graph_search(settings: RetrievalSettings, stores: Stores) -> GraphSearch | None:
    """The graph walk (None when the graph is off or the store has no fact tables)."""
    if settings.graph_extractor == "none" or stores.facts is None:
        return None
    config = GraphConfig(hops=settings.graph_hops, top_k=settings.graph_top_k)
    return GraphSearch(stores.facts, config)


def graph_index(
    settings: RetrievalSettings, stores: Stores, choice: ExtractorChoice | None
) -> GraphIndex | None:
    """What the retrieval role stores each batch's facts with (None: the graph is off)."""
    if settings.graph_extractor == "none" or stores.facts is None or choice is None:
        return None
    return GraphIndex(stores.facts, choice.extractor)
