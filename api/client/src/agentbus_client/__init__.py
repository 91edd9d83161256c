"""agentbus-client: the Python client of the agentbus API, installable without the server.

::

    from agentbus_client import AgentbusClient

    with AgentbusClient("http://127.0.0.1:8080", api_key) as client:
        run = client.ask("What is 23 × 19?")
        print(run.answer)
        for event in client.stream("And 24 × 19?", mode="multi"):
            print(event.type)

It depends on httpx, websockets and agentbus-contracts only. What the API sends is declared
once, in :mod:`agentbus_contracts` (pydantic only), which the server imports too
(``agentbus_client.models`` names the same objects). The names below load on first use, so
``import agentbus_client.models`` does not load httpx or websockets.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentbus_client.async_client import AsyncAgentbusClient
    from agentbus_client.errors import (
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
    from agentbus_client.http import RetryRules
    from agentbus_client.stream import EventStream, StreamItem
    from agentbus_client.sync_client import AgentbusClient, SyncEventStream
    from agentbus_contracts import Run, RunPage, Snapshot, Started

__version__ = "0.2.0"

#: Where each public name lives.
_HOMES = {
    "AsyncAgentbusClient": "async_client",
    "AgentbusClient": "sync_client",
    "SyncEventStream": "sync_client",
    "EventStream": "stream",
    "StreamItem": "stream",
    "RetryRules": "http",
    "Run": "models",
    "RunPage": "models",
    "Snapshot": "models",
    "Started": "models",
    **dict.fromkeys(
        (
            "AgentbusError",
            "Conflict",
            "ConnectionFailed",
            "Forbidden",
            "Gone",
            "InvalidRequest",
            "NotFound",
            "RateLimited",
            "TooLarge",
            "Unauthorized",
            "Unavailable",
        ),
        "errors",
    ),
}

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


def __getattr__(name: str) -> Any:
    """Load a public name from its module on first use (PEP 562)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'agentbus_client' has no attribute {name!r}")
    value = getattr(import_module(f"agentbus_client.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names, loaded or not."""
    return sorted({*globals(), *__all__})
