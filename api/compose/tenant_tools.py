"""Each tenant's tools as its models are offered them (`agents.deps.ToolCatalogue`).

The gateway's registry with the tenant's MCP servers (the deployment's and its own) added,
cut to the tools the tenant enabled: the same registry and policy the gateway calls them
through, so a model is offered what the gateway would run. The policy is cached per tenant
(`StoredTenantPolicies`) and the registry by the MCP hub, so a step costs no store read.
"""

from __future__ import annotations

from collections.abc import Sequence

from agents.deps import tool_definitions
from agents.llm.ports import ToolDefinition
from gateway.mcp.hub import McpHub
from gateway.ports import TenantPolicies
from gateway.registry import ToolRegistry


class TenantTools:
    """Implements `agents.deps.ToolCatalogue`.

    Args:
        registry: the deployment's tools (built-ins, search_docs, plugins).
        policies: each tenant's enabled tools and MCP servers.
        mcp: the MCP sessions the gateway calls them through.
    """

    def __init__(self, registry: ToolRegistry, policies: TenantPolicies, mcp: McpHub) -> None:
        self._registry = registry
        self._policies = policies
        self._mcp = mcp
        self._offered: dict[tuple[int, frozenset[str] | None], list[ToolDefinition]] = {}

    async def __call__(self, tenant_id: str) -> Sequence[ToolDefinition]:
        """The tenant's enabled tools, MCP tools included."""
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
        return offered
