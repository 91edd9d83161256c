"""``api.client``: the Python client under its old import name, kept for one release.

The client is its own distribution now, ``agentbus-client`` (``api/client/`` with its own
``pyproject.toml``, installable without the server), imported as ``agentbus_client``.
Import it from there; the names below are the same objects, each with a
``DeprecationWarning`` when it is used from here. The modules that were under
``api.client`` (``async_client``, ``models``, ...) live in ``agentbus_client`` (the models
in ``agentbus_contracts``).
"""

from bus.moved import moved

#: The names importable from here, each one `agentbus_client`'s own.
MOVED_NAMES = (
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
)

__getattr__ = moved(__name__, dict.fromkeys(MOVED_NAMES, "agentbus_client"))
