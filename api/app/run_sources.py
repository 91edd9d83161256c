"""Which retrieval sources a run gathers from when its asker named none, from what exists.

A tenant with documents gathers from them (and from the knowledge graph extracted from
them, when the graph is on); a user with long-term memories, or a conversation with
history, from memory; a tenant with egress on, from the web. Single mode searches only the
documents and the memories, before its first model call. Whether a tenant has documents is
cached beside the tenant's settings version, which an upload or a deletion of a document
bumps, so the next run sees the change; that a user has memories, for
``AGENTBUS_API_KEY_CACHE_S``. That they have none is
a mark beside the store (`api.app.ports.MemoryMarks`), set by the memory step's writer when
it stores one, so a question costs no count of rows; the process caches it beside the
tenant's settings version, which that writer bumps at a user's first memory, so the first
memory counts from the next run on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agents.sources import MEMORY, WEB
from api.app.errors import Unavailable
from api.app.read_through import ReadThrough
from bus.errors import StoreError
from bus.store import Scope
from retrieval.gather_source import DOCUMENTS
from retrieval.graph.source import GRAPH

if TYPE_CHECKING:
    from api.app.auth import Principal
    from api.app.ports import MemoryMarks
    from api.app.preferences import Effective
    from bus.store import DocumentStore, MemoryStore


class RunSources:
    """Finds the sources that exist for a run (cached per tenant and user).

    Args:
        documents: the document catalogue (None: no tenant has documents).
        memories: the users' long-term memories (None: no user has any).
        graph: the knowledge graph is on (a tenant with documents gathers from it too).
        cache_s: how long a tenant's "has documents" (and a user's "has memories") holds.
        marks: where a user's memories are marked (None: the store is counted each time).
    """

    def __init__(
        self,
        documents: DocumentStore | None,
        memories: MemoryStore | None,
        *,
        graph: bool,
        cache_s: float,
        marks: MemoryMarks | None = None,
    ) -> None:
        self._marks = marks
        self._documents = documents
        self._memories = memories
        self._graph = graph
        self._has_documents: ReadThrough[bool] = ReadThrough(cache_s)
        self._has_memory: ReadThrough[bool] = ReadThrough(cache_s)

    def forget(self, tenant_id: str) -> None:
        """Drop the tenant's cached "has documents" (the one kept without a version)."""
        self._has_documents.forget(tenant_id)

    async def single_context(self, who: Principal, effective: Effective) -> list[str]:
        """Single mode's context: the tenant's documents, searched before the first model
        call, unless the tenant turned it off or chose sources without documents; and the
        user's memories as notes, while the tenant has memory on."""
        found: list[str] = []
        chosen = effective.sources
        documents = effective.single_context and (chosen is None or DOCUMENTS in chosen)
        if documents and await self._has_any_documents(who):
            found.append(DOCUMENTS)
        if await self._memory_exists(who, effective):
            found.append(MEMORY)
        return found

    async def default_sources(
        self, who: Principal, effective: Effective, has_history: bool
    ) -> list[str]:
        """The sources that exist for a run whose tenant chose none (cached per tenant)."""
        found: list[str] = []
        if await self._has_any_documents(who):
            found.append(DOCUMENTS)
            if self._graph:  # the facts extracted from those documents
                found.append(GRAPH)
        if has_history or await self._memory_exists(who, effective):
            found.append(MEMORY)
        if effective.egress_enabled:
            found.append(WEB)
        return found

    async def _has_any_documents(self, who: Principal) -> bool:
        """Whether the tenant has ingested any document.

        Cached beside the tenant's settings version this request's key check read
        (``Principal.settings_version``), which an upload or a deletion bumps before it
        returns (`api.app.documents.Documents`): the next run reads it again. Without a
        version, cached per tenant for ``cache_s``.
        """
        if self._documents is None:
            return False
        documents, tenant_id = self._documents, who.tenant_id

        async def read() -> tuple[bool, bool]:
            try:
                return await documents.has_any(tenant_id), True
            except StoreError as e:
                raise Unavailable(f"cannot read the document catalogue: {e}") from e

        if who.settings_version is None:
            return await self._has_documents.get(tenant_id, read)
        return await self._has_documents.get(f"{tenant_id}\n{who.settings_version}", read)

    async def _has_memories(self, who: Principal) -> bool:
        """Whether the user has any long-term memory.

        A yes is cached. A no is cached only beside the tenant's settings version this
        request's key check read (``Principal.settings_version``): the writer that marks a
        user's first memory bumps that version, so the next question sees it. Without a
        version, a no is read from the user's mark each time, and the rows are counted only
        when there is no mark.
        """
        if self._memories is None:
            return False
        memories, owner = self._memories, Scope.user(who.tenant_id, who.subject)
        marks = self._marks

        async def read() -> tuple[bool, bool]:
            known = None if marks is None else await marks.has(who.tenant_id, who.subject)
            if known is not None:
                return known, known
            try:
                found = await memories.count(owner) > 0
            except StoreError as e:
                raise Unavailable(f"cannot read the memories: {e}") from e
            if marks is not None and not found:
                await marks.none_found(who.tenant_id, who.subject)
            return found, found

        user = f"{who.tenant_id}\n{who.subject}"
        if marks is None or who.settings_version is None:
            return await self._has_memory.get(user, read)

        async def read_either() -> tuple[bool, bool]:
            return (await read())[0], True

        return await self._has_memory.get(f"{user}\n{who.settings_version}", read_either)

    async def _memory_exists(self, who: Principal, effective: Effective) -> bool:
        """Whether the run gathers the user's memories (memory on, not left out of the
        tenant's sources, and the user has some)."""
        chosen = effective.sources
        if not effective.memory or (chosen is not None and MEMORY not in chosen):
            return False
        return await self._has_memories(who)
