"""agentbus: bus package."""
