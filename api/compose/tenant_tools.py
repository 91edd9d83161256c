"""Each tenant's tools as its models are offered them (`agents.deps.ToolCatalogue`).

The gateway's registry with the tenant's MCP servers (the deployment's and its own) added,
cut to the tools the tenant enabled: the same registry and policy the gateway calls them
through, so a model is offered what the gateway would run. The policy is cached per tenant
(`StoredTenantPolicies`) and the registry by the MCP hub, so a step costs no store read.

A tenant without documents is not offered the tools that search them: every tool in the
prompt is one more a small model may pick for the wrong question. Whether it has any is
cached beside the tenant's settings version, which an upload or a deletion bumps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agents.deps import tool_definitions
from agents.llm.ports import ToolDefinition
from api.app.read_through import ReadThrough
from bus.errors import StoreError
from bus.store import DocumentStore
from gateway.mcp.hub import McpHub
from gateway.ports import TenantPolicies
from gateway.registry import ToolRegistry
from gateway.tools.query_graph import QueryGraph
from gateway.tools.search_docs import SearchDocs

#: The tools that search the tenant's documents (or the facts taken from them).
DOCUMENT_TOOLS = frozenset({SearchDocs.spec.name, QueryGraph.spec.name})


class TenantTools:
    """Implements `agents.deps.ToolCatalogue`.

    Args:
        registry: the deployment's tools (built-ins, search_docs, plugins).
        policies: each tenant's enabled tools and MCP servers.
        mcp: the MCP sessions the gateway calls them through.
        documents: the document catalogue (None: the document tools are always offered).
        documents_ttl_s: how long a tenant's having documents, or not, is trusted.
        versions: the tenant's settings version the policy just read was read at
            (`StoredTenantPolicies.version_of`): "has documents" is cached beside it, and
            an upload or a deletion bumps it, so the next step sees the change. None: per
            tenant, for ``documents_ttl_s``.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        policies: TenantPolicies,
        mcp: McpHub,
        *,
        documents: DocumentStore | None = None,
        documents_ttl_s: float = 5.0,
        versions: Callable[[str], object] | None = None,
    ) -> None:
        self._registry = registry
        self._policies = policies
        self._mcp = mcp
        self._documents = documents
        self._has_documents: ReadThrough[bool] = ReadThrough(documents_ttl_s)
        self._versions = versions
        self._offered: dict[tuple[int, frozenset[str] | None], list[ToolDefinition]] = {}

    async def __call__(self, tenant_id: str) -> Sequence[ToolDefinition]:
        """The tenant's enabled tools, MCP tools included; the document tools only when it
        has documents."""
        policy = await self._policies.for_tenant(tenant_id)
        registry = await self._mcp.registry_for(self._registry, policy.mcp_servers)
        key = (id(registry), policy.enabled_tools)
        offered = self._offered.get(key)
        if offered is None:
            enabled = policy.enabled_tools
            offered = [
                t for t in tool_definitions(registry) if enabled is None or t.name in enabled
            ]
            if len(self._offered) > 1_000:
                self._offered.clear()
            self._offered[key] = offered
        if not await self._any_documents(tenant_id):
            return [t for t in offered if t.name not in DOCUMENT_TOOLS]
        return offered

    async def _any_documents(self, tenant_id: str) -> bool:
        documents = self._documents
        if documents is None:
            return True

        async def read() -> tuple[bool, bool]:
            try:
                return await documents.has_any(tenant_id), True
            except StoreError:
                return True, False  # offer them, as before; the gateway still checks

        # Read after the policy: the version it was read at is this step's.
        version = None if self._versions is None else self._versions(tenant_id)
        key = tenant_id if version is None else f"{tenant_id}\n{version}"
        return await self._has_documents.get(key, read)
