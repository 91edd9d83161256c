"""Example tool plugins (``AGENTBUS_TOOL_PLUGINS``), not registered unless a deployment asks."""
