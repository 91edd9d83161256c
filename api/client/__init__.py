"""The Python client of the agentbus API: ``AgentbusClient`` and ``AsyncAgentbusClient``.

::

    from api.client import AgentbusClient

    with AgentbusClient("http://127.0.0.1:8080", api_key) as client:
        run = client.ask("What is 23 × 19?")
        print(run.answer)
        for event in client.stream("And 24 × 19?", mode="multi"):
            print(event.type)
"""

from api.client.async_client import AsyncAgentbusClient
from api.client.errors import (
    AgentbusError,
    Conflict,
    ConnectionFailed,
    Forbidden,
    Gone,
    InvalidRequest,
    NotFound,
    RateLimited,
    TooLarge,
    Unauthorized,
    Unavailable,
)
from api.client.http import RetryRules
from api.client.models import Run, RunPage, Snapshot, Started
from api.client.stream import EventStream, StreamItem
from api.client.sync_client import AgentbusClient, SyncEventStream

__all__ = [
    "AgentbusClient",
    "AgentbusError",
    "AsyncAgentbusClient",
    "Conflict",
    "ConnectionFailed",
    "EventStream",
    "Forbidden",
    "Gone",
    "InvalidRequest",
    "NotFound",
    "RateLimited",
    "RetryRules",
    "Run",
    "RunPage",
    "Snapshot",
    "Started",
    "StreamItem",
    "SyncEventStream",
    "TooLarge",
    "Unauthorized",
    "Unavailable",
]
