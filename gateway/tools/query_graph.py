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
from gateway.ports import Caller, EgressClient
from gateway.spec import Risk, ToolSpec
from retrieval.citations import GRAPH_TOOL
from retrieval.graph.search import GraphSearch
from retrieval.models import Access

MAX_TOP_K = 20
_PASSAGE = {
    "type": "object",
    "properties": {
        "ref": {"type": "integer", "minimum": 1},
        "id": {"type": "string"},
        "source": {"type": "string"},
        "title": {"type": "string"},
        "heading": {"type": "string"},
        "text": {"type": "string"},
    },
    "required": ["ref", "id", "source", "title", "text"],
    "additionalProperties": False,
}
NOTE = (
    "Each result is a passage with the facts that link it to the question. Cite a passage "
    "you use as [ref], e.g. [1]. Do not cite anything not listed here."
)


class QueryGraph:
    """Walks the facts extracted from the tenant's documents.

    Args:
        search: the graph walk over the SQL fact store.
        default_top_k: passages returned when the model does not ask for a number.
    """

    spec = ToolSpec(
        name=GRAPH_TOOL,
        description=(
            "Look up facts linking the people, organisations, places and figures a question "
            "names, across the user's documents (one or two hops: who leads X, where that "
            "person is based). Returns numbered passages; cite the ones you use as [n]."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 1000,
                    "description": "The question, or the names to start from.",
                },
                "top_k": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_TOP_K,
                    "description": "How many passages to return (default 5).",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "results": {"type": "array", "items": _PASSAGE},
                "note": {"type": "string"},
            },
            "required": ["query", "results"],
            "additionalProperties": False,
        },
        risk=Risk.LOW,
        timeout_s=20.0,
        max_output_bytes=32_768,
    )

    def __init__(self, search: GraphSearch, *, default_top_k: int = 5) -> None:
        self._search = search
        self._default_top_k = default_top_k

    async def run(self, args: dict[str, Any], net: EgressClient | None) -> dict[str, Any]:
        """Refused: without a caller there is no tenant to filter by."""
        raise ToolError("query_graph needs the caller's tenant; it runs only through the gateway")

    async def run_as(
        self, caller: Caller, args: dict[str, Any], net: EgressClient | None
    ) -> dict[str, Any]:
        """Walk the graph as ``caller`` (their tenant and groups filter every read)."""
        query: str = args["query"]
        top_k = int(args.get("top_k") or self._default_top_k)
        try:
            found = await self._search.search(
                query, Access.of(caller.tenant_id, caller.groups), top_k=top_k
            )
        except StoreError as e:
            raise ToolError("the knowledge graph is unavailable right now") from e
        results = [{"ref": n, **p.item()} for n, p in enumerate(found, 1)]
        return {"query": query, "results": results, "note": NOTE}
