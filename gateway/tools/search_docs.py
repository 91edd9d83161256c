"""search_docs: hybrid search over the caller's documents (LOW risk, no network).

A `CallerAwareTool`: the chain passes the caller, and the search is filtered by the
caller's tenant and ACL groups inside the vector store. The gateway does not open the
store: `over_the_bus` sends each search to the retrieval role (the process that owns the
store; `retrieval.remote`), so any number of gateways run anywhere. Results are numbered
``[1]..[k]``; the model cites them as ``[n]`` and the finalizer keeps only citations of
chunks returned here (`retrieval.citations`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from gateway.errors import ToolError
from gateway.ports import Caller, EgressClient
from gateway.spec import Risk, ToolSpec
from retrieval.citations import SEARCH_TOOL, numbered
from retrieval.errors import RetrievalError
from retrieval.models import Access, Hit
from retrieval.remote import RemoteSearch
from retrieval.search import Searcher

#: How the tool searches: (caller, query, top_k) -> hits the caller may read, best first.
DocsSearch = Callable[[Caller, str, int], Awaitable[list[Hit]]]

#: Seconds a search sent over the bus may wait for its reply (under the tool's timeout).
BUS_WAIT_S = 18.0


def over_the_bus(remote: RemoteSearch, wait_s: float = BUS_WAIT_S) -> DocsSearch:
    """Search through the retrieval role, as part of the caller's run (the gateway's way)."""

    async def search(caller: Caller, query: str, top_k: int) -> list[Hit]:
        if not caller.run_id:
            raise ToolError("search_docs over the bus needs the caller's run")
        return await remote.search(
            query,
            Access.of(caller.tenant_id, caller.groups),
            top_k=top_k,
            run_id=caller.run_id,
            subject=caller.subject,
            request_id=caller.request_id,
            deadline=caller.deadline,
            wait_s=wait_s,
        )

    return search


def in_process(searcher: Searcher) -> DocsSearch:
    """Search a store this process holds (tests, tools run beside the store)."""

    async def search(caller: Caller, query: str, top_k: int) -> list[Hit]:
        return await searcher.search(query, Access.of(caller.tenant_id, caller.groups), top_k=top_k)

    return search


MAX_TOP_K = 20
_CHUNK = {
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
NOTE = "Cite a chunk you use as [ref], e.g. [1]. Do not cite anything not listed here."


class SearchDocs:
    """Searches the tenant's ingested documents.

    Args:
        search: how to search (`over_the_bus` or `in_process`); hybrid, then the reranker.
        default_top_k: chunks returned when the model does not ask for a number.
    """

    spec = ToolSpec(
        name=SEARCH_TOOL,
        description=(
            "Search the user's documents (hybrid keyword + semantic search). Returns "
            "numbered chunks with their source and title; cite the ones you use as [n]."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 1000,
                    "description": "What to look for, in natural language or keywords.",
                },
                "top_k": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_TOP_K,
                    "description": "How many chunks to return (default 5).",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "results": {"type": "array", "items": _CHUNK},
                "note": {"type": "string"},
            },
            "required": ["query", "results"],
            "additionalProperties": False,
        },
        risk=Risk.LOW,
        timeout_s=20.0,
        max_output_bytes=32_768,
    )

    def __init__(self, search: DocsSearch, *, default_top_k: int = 5) -> None:
        self._search = search
        self._default_top_k = default_top_k

    async def run(self, args: dict[str, Any], net: EgressClient | None) -> dict[str, Any]:
        """Refused: without a caller there is no tenant to filter by."""
        raise ToolError("search_docs needs the caller's tenant; it runs only through the gateway")

    async def run_as(
        self, caller: Caller, args: dict[str, Any], net: EgressClient | None
    ) -> dict[str, Any]:
        """Search as ``caller`` (their tenant and groups filter every stage)."""
        query: str = args["query"]
        top_k = int(args.get("top_k") or self._default_top_k)
        try:
            hits = await self._search(caller, query, top_k)
        except RetrievalError as e:
            raise ToolError(f"document search is unavailable right now ({e.code})") from e
        return {"query": query, "results": numbered(hits), "note": NOTE}
