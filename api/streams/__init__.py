"""Redis Streams transports of the edge: the runs.questions admission consumer."""
