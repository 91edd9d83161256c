"""The roles: one handler factory per bus role, each asking the graph where to go next."""
