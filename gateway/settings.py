"""The gateway's deployment settings: egress, plugin tools and MCP servers."""

from __future__ import annotations

from pydantic import Field

from bus.settings import EnvSettings


class GatewaySettings(EnvSettings):
    """What every tenant's tools start from; tenants overlay their own preferences."""

    egress_enabled: bool = Field(default=False, description="Tools may reach the internet.")
    allowed_egress_hosts: str = Field(
        default="", description="Comma-separated hosts; '*' = any (the SSRF guard still applies)."
    )
    tool_plugins: str = Field(
        default="",
        description=(
            "Extra gateway tools: comma-separated 'module:factory' entries; each factory is "
            "called with no arguments and returns a tool or an iterable of tools."
        ),
    )
    mcp_servers: str = Field(
        default="",
        description=(
            "MCP servers every tenant gets, as a JSON list of objects: "
            '{"name": "files", "command": ["python", "-m", "srv"]} (stdio) or '
            '{"name": "crm", "url": "https://mcp.example.com/mcp"} (streamable HTTP); '
            "see gateway.mcp.config.McpServerConfig for every field."
        ),
    )
