"""Client events: the typed frames written to ``run:{id}:events`` and relayed to clients.

The event models are declared once, in the contracts' distribution
(``agentbus_contracts.events``, ``bus/contracts``, which depends on pydantic alone), so the
client decodes exactly what the workers emit. This module re-exports them for the server's
code and adds what only the server needs: a run's status as the store keeps it.
"""

from __future__ import annotations

from enum import StrEnum

from agentbus_contracts.events import (
    CLIENT_EVENT,
    FINAL_STATUSES,
    Answer,
    ApprovalRequest,
    Citation,
    Citations,
    ClientEvent,
    ClientToolCall,
    Critique,
    Done,
    DraftSuperseded,
    ErrorEvent,
    Event,
    FinalStatus,
    Interpreted,
    Plan,
    Reasoning,
    RunStarted,
    StepRetry,
    ToolCallStarted,
    ToolResult,
    Verdict,
    event_from_doc,
    parse_event,
)

__all__ = [
    "CLIENT_EVENT",
    "TERMINAL_STATUSES",
    "Answer",
    "ApprovalRequest",
    "Citation",
    "Citations",
    "ClientEvent",
    "ClientToolCall",
    "Critique",
    "Done",
    "DraftSuperseded",
    "ErrorEvent",
    "Event",
    "FinalStatus",
    "Interpreted",
    "Plan",
    "Reasoning",
    "RunStarted",
    "RunStatus",
    "StepRetry",
    "ToolCallStarted",
    "ToolResult",
    "Verdict",
    "event_from_doc",
    "parse_event",
]


class RunStatus(StrEnum):
    """Where a run is in its life (the store keeps it; see `FinalStatus` for its end)."""

    QUEUED = "queued"
    RUNNING = "running"
    SUSPENDED = "suspended"
    DONE = "done"
    ERROR = "error"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    REJECTED = "rejected"
    BUDGET_EXHAUSTED = "budget_exhausted"


#: The statuses a run ends in; RunStatus(...) fails at import if the two drift apart.
TERMINAL_STATUSES = frozenset(RunStatus(status) for status in FINAL_STATUSES)
