"""The edge's application layer: the use cases that every transport calls.

HTTP routes, the websocket session, the runs.questions consumer and the CLI are adapters over it.
"""
