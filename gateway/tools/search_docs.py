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
from gateway.ports import Caller
from gateway.tools.retrieval_tool import RetrievalTool, retrieval_spec
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


NOTE = "Cite a chunk you use as [ref], e.g. [1]. Do not cite anything not listed here."


class SearchDocs(RetrievalTool[DocsSearch]):
    """Searches the tenant's ingested documents.

    Args:
        search: how to search (`over_the_bus` or `in_process`); hybrid, then the reranker.
        default_top_k: chunks returned when the model does not ask for a number.
    """

    spec = retrieval_spec(
        name=SEARCH_TOOL,
        description=(
            "Search the user's documents (hybrid keyword + semantic search). Returns "
            "numbered chunks with their source and title; cite the ones you use as [n]."
        ),
        query_help="What to look for, in natural language or keywords.",
        what="chunks",
    )
    note = NOTE

    async def find(self, caller: Caller, query: str, top_k: int) -> list[dict[str, Any]]:
        """Search as ``caller`` (their tenant and groups filter every stage)."""
        try:
            hits = await self._search(caller, query, top_k)
        except RetrievalError as e:
            raise ToolError(f"document search is unavailable right now ({e.code})") from e
        return numbered(hits)
