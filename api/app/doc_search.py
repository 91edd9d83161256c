"""Searching the caller's documents outside a run (the MCP server's ``search_docs``).

The search is the gateway's own (`gateway.tools.search_docs.over_the_bus`): it is sent to
the retrieval role, the process that holds the vector store, and filtered there by the
caller's tenant and ACL groups inside the query; every hit is checked against them again
when the reply arrives. A search belongs to a run on the bus (its shard, deadline and
reply key), so each search outside a run gets a run id of its own (``search-…``) that no
run store row ever has: its keys expire with the run lifetime, and nothing is written to
SQL.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from api.app.errors import InvalidRequest, SearchUnavailable
from gateway.ports import Caller
from gateway.tools.retrieval_tool import MAX_TOP_K
from retrieval.citations import numbered
from retrieval.errors import RetrievalError

if TYPE_CHECKING:
    from api.app.auth import Principal
    from gateway.tools.search_docs import DocsSearch

#: The longest query accepted (the gateway tool's own limit).
MAX_QUERY_CHARS = 1000
#: How long a search waits for the retrieval role's reply.
SEARCH_WAIT_S = 15.0


class DocSearch:
    """Searches documents as a caller, through the retrieval role (one per process).

    Args:
        search: the gateway's search (`gateway.tools.search_docs.over_the_bus`), wired by
            the composition root.
    """

    def __init__(self, search: DocsSearch) -> None:
        self._search = search

    async def search(self, who: Principal, query: str, top_k: int = 5) -> list[dict[str, Any]]:
        """The best ``top_k`` chunks ``who`` may read, numbered from 1 (``ref``), best first.

        Raises:
            InvalidRequest: an empty or too long query, or ``top_k`` out of 1..20.
            SearchUnavailable: no retrieval worker answered, or its search failed.
        """
        query = query.strip()
        if not query or len(query) > MAX_QUERY_CHARS:
            raise InvalidRequest(f"query: 1-{MAX_QUERY_CHARS} characters", field="query")
        if not 1 <= top_k <= MAX_TOP_K:
            raise InvalidRequest(f"top_k: 1-{MAX_TOP_K}", field="top_k")
        request = uuid.uuid4().hex
        caller = Caller(
            tenant_id=who.tenant_id,
            subject=who.subject,
            groups=frozenset(who.groups),
            run_id=f"search-{request}",
            request_id=request,
        )
        try:
            hits = await self._search(caller, query, top_k)
        except RetrievalError as e:
            raise SearchUnavailable(f"the document search failed ({e.code})") from e
        return numbered(hits)
