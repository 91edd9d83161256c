"""The default `TenantPolicies`: every tenant gets the deployment's settings."""

from __future__ import annotations

from gateway.egress.policy import EgressPolicy
from gateway.mcp_config.servers import McpServerConfig, parse_servers
from gateway.ports import TenantPolicy


class DeploymentPolicies:
    """Implements `gateway.ports.TenantPolicies` with one policy for every tenant.

    Args:
        policy: the deployment defaults (see `from_settings`).
    """

    def __init__(self, policy: TenantPolicy) -> None:
        self.policy = policy

    @classmethod
    def from_settings(
        cls,
        *,
        egress_enabled: bool,
        allowed_egress_hosts: str,
        mcp_servers: str = "",
        enabled_tools: frozenset[str] | None = None,
    ) -> DeploymentPolicies:
        """From ``AGENTBUS_EGRESS_ENABLED``, ``..._ALLOWED_EGRESS_HOSTS``, ``..._MCP_SERVERS``.

        Raises:
            ConfigInvalid: the MCP servers setting is malformed.
            ValueError: an allowed host is not a host name, IP or wildcard.
        """
        egress = EgressPolicy.from_settings(egress_enabled, allowed_egress_hosts)
        servers: tuple[McpServerConfig, ...] = parse_servers(mcp_servers)
        return cls(
            TenantPolicy(
                enabled_tools=enabled_tools,
                egress_enabled=egress.enabled,
                allowed_egress_hosts=egress.allowed_hosts,
                mcp_servers=servers,
            )
        )

    async def for_tenant(self, tenant_id: str) -> TenantPolicy:
        """The deployment policy, whoever the tenant is."""
        return self.policy
