"""agentbus: agents package."""
