"""``api.client``: the Python client under its old import name, kept for one release.

The client is its own distribution now, ``agentbus-client`` (``api/client/`` with its own
``pyproject.toml``, installable without the server), imported as ``agentbus_client``.
Import it from there; the names below are the same objects. The modules that were under
``api.client`` (``async_client``, ``models``, ...) live in ``agentbus_client`` (the models
in ``agentbus_client.models``).
"""

from agentbus_client import (
    AgentbusClient,
    AgentbusError,
    AsyncAgentbusClient,
    Conflict,
    ConnectionFailed,
    EventStream,
    Forbidden,
    Gone,
    InvalidRequest,
    NotFound,
    RateLimited,
    RetryRules,
    Run,
    RunPage,
    Snapshot,
    Started,
    StreamItem,
    SyncEventStream,
    TooLarge,
    Unauthorized,
    Unavailable,
)

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
