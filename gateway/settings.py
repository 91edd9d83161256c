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
            "see gateway.mcp_config.servers.McpServerConfig for every field."
        ),
    )
    tool_private_hosts: str = Field(
        default="",
        description=(
            'Private services tools may reach, as a JSON object {"tool": ["sensor.internal"]}: '
            "exact hosts that tool may reach although they are private addresses (never "
            "metadata endpoints); each request to one carries a signed service token."
        ),
    )
    # Signed webhooks (gateway/webhooks): sent by the processes that run gateway workers.
    webhook_private_hosts: str = Field(
        default="",
        description="Comma-separated exact hosts (names or IPs) webhooks may reach although "
        "they are private addresses (receivers inside your network); never metadata endpoints.",
    )
    webhook_backoff_s: float = Field(
        default=5.0, gt=0, description="Delay before a failed webhook's first retry (doubling)."
    )
    webhook_backoff_max_s: float = Field(
        default=3600.0, gt=0, description="Longest delay between two webhook attempts."
    )
    webhook_retry_for_s: float = Field(
        default=86_400.0, gt=0, description="How long a webhook is retried before it fails."
    )
    webhook_timeout_s: float = Field(
        default=10.0, gt=0, le=120, description="Time a receiver has to answer one attempt."
    )
    webhook_poll_ms: int = Field(
        default=250, ge=10, description="How often the dispatcher looks for due deliveries."
    )
