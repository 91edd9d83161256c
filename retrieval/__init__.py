"""agentbus: retrieval package."""
