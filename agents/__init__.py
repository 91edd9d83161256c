"""agentbus: the agent roles, the graph that routes between them, and the LLM port.

Layout and rules: agents/README.md.
"""
