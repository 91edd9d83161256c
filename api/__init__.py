"""agentbus: api package."""
