"""MCP servers as gateway tools: listed per tenant, run under the same chain.

`gateway.mcp_config.servers.McpServerConfig` says how to reach a server (a stdio command
the gateway starts as a child process, or a streamable-HTTP URL, checked by the SSRF guard
and pinned); `connection.McpConnection` keeps one session open; `tool.McpTool` is one
server tool as a `gateway.ports.Tool` (risk HIGH unless configured otherwise, side effects
assumed); `hub.McpHub` keeps connections per server and builds each tenant's registry.
"""
