"""The API's routes, one module per resource; each exposes a module-level ``router``
(``mcp`` an ASGI endpoint instead: the MCP SDK serves its requests)."""
