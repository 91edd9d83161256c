"""agentbus: the tool gateway, the only place tools execute.

`gateway.chain.invoke` runs one call through the policy chain (`gateway.checks`, one
module per check, in order): lookup → permission → risk approval → input schema → egress
(per outbound request: `gateway.egress`) → timeout → output schema → output size. Every
call ends in a `gateway.outcome.ToolOutcome` and an `AuditRecord` (`gateway.audit` turns it
into a row of the hash-chained log in `bus.store.audit`). `gateway.worker` is the bus role;
`gateway.mcp` brings tenants' MCP servers in; `gateway.plugins` a deployment's own tools.
Operator notes: gateway/README.md.
"""
