"""agentbus: gateway package."""
