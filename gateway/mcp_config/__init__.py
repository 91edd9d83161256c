"""What a tenant's MCP servers are, as values: below the ports, which carry them.

`servers.McpServerConfig` says how to reach a server and what its sandbox grants;
`grants` reads the hosts a sandboxed server may reach. Nothing here opens a connection or
imports the ports: `gateway.mcp` runs the servers.
"""
