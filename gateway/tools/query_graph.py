"""query_graph: the caller's knowledge graph, walked from the entities a question names
(LOW risk, no network).

A `CallerAwareTool` like ``search_docs``: the chain passes the caller, and the walk is
filtered by the caller's tenant and ACL groups inside each SQL read
(`retrieval.graph.search`). The facts are in the SQL store, which every process opens,
so the gateway reads them itself. Each passage is a chunk with the facts that led to it,
numbered ``[1]..[k]`` (renumbered from the run's next free number) and cited and checked
like a document chunk.
"""

from __future__ import annotations

from typing import Any

from bus.errors import StoreError
from gateway.errors import ToolError
from gateway.ports import Caller
from gateway.tools.retrieval_tool import RetrievalTool, retrieval_spec
from retrieval.citations import GRAPH_TOOL
from retrieval.graph.search import GraphSearch
from retrieval.models import Access

NOTE = (
    "Each result is a passage with the facts that link it to the question. Cite a passage "
    "you use as [ref], e.g. [1]. Do not cite anything not listed here."
)


class QueryGraph(RetrievalTool[GraphSearch]):
    """Walks the facts extracted from the tenant's documents.

    Args:
        search: the graph walk over the SQL fact store.
        default_top_k: passages returned when the model does not ask for a number.
    """

    spec = retrieval_spec(
        name=GRAPH_TOOL,
        description=(
            "Look up facts linking the people, organisations, places and figures a question "
            "names, across the user's documents, one or two links away (from a project to "
            "the person at its head, then to that person's office). Returns numbered "
            "passages; cite the ones you use as [n]."
        ),
        query_help="The user's question as they asked it, or the names in it.",
        what="passages",
    )
    note = NOTE

    async def find(self, caller: Caller, query: str, top_k: int) -> list[dict[str, Any]]:
        """Walk the graph as ``caller`` (their tenant and groups filter every read)."""
        try:
            found = await self._search.search(
                query, Access.of(caller.tenant_id, caller.groups), top_k=top_k
            )
        except StoreError as e:
            raise ToolError("the knowledge graph is unavailable right now") from e
        return [{"ref": n, **p.item()} for n, p in enumerate(found, 1)]
