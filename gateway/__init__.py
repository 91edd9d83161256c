"""agentbus: the tool gateway, the only place tools execute.

`gateway.chain.invoke` runs one call through the policy chain (`gateway.checks`, one
module per check, in order): lookup → permission → risk approval → input schema → egress
(per outbound request: `gateway.egress`) → timeout → output schema → output size → the
`on_outcome` audit hook. Every call ends in a `gateway.outcome.ToolOutcome`.
"""
