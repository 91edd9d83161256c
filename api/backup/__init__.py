"""``agentbus backup`` and ``agentbus restore``: the embedded defaults (SQLite, the embedded
Redis, the embedded vector store) copied consistently, and brought back."""
