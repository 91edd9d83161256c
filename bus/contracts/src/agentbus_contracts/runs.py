"""Runs as the API shows them: a started run, a stored run, a page of runs, a snapshot."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from agentbus_contracts.base import IsoTime, View
from agentbus_contracts.events import FINAL_STATUSES

#: The statuses a run ends in (it changes no more after them).
TERMINAL = FINAL_STATUSES


class Started(View):
    """A run the API accepted (``POST /api/v1/runs``); follow it at ``events_url`` (SSE),
    with a websocket ``join`` or with the client's ``join(run_id)``."""

    run_id: str
    conversation_id: str
    status: str = "queued"
    events_url: str
    replayed: bool = Field(description="True when an Idempotency-Key retry found this run.")
    queued: bool = Field(
        default=False,
        description="It waits for the conversation's running run to end (multitask enqueue, "
        "interrupt or rollback); its events start when it does.",
    )
    ahead: int = Field(default=0, description="Runs of the conversation before it.")


class Run(View):
    """A run as the store holds it (``queued`` until intake has admitted it): status,
    answer, trace and usage."""

    id: str
    subject: str | None = Field(default=None, description="The user who started it.")
    status: str
    mode: str | None = None
    question: str | None = None
    answer: str | None = None
    error_code: str | None = None
    conversation_id: str | None = None
    created_at: IsoTime | None = None
    finished_at: IsoTime | None = None
    trace: list[dict[str, Any]] | None = None
    usage: dict[str, int] | None = None
    cost_usd: float | None = Field(
        default=None, description="Model cost in US dollars (AGENTBUS_LLM_PRICES); None unpriced."
    )
    partial: bool = Field(
        default=False,
        description="The run ended other than done (error, timeout, cancelled, rejected, "
        "budget_exhausted): `answer` is null and `partial_answer` holds what it had "
        "written, if anything.",
    )
    partial_answer: str | None = Field(
        default=None, description="A partial run's draft (from its trace); never the answer."
    )
    verified: bool | None = Field(
        default=None,
        description="What a check established: true (a recompute matched, or a judge of "
        "measured precision approved), false (the last judge asked for changes), or null "
        "(unknown: nothing established it, not judged, or not ended yet).",
    )
    verified_reason: str | None = Field(default=None, description="Why, in a sentence.")

    @property
    def finished(self) -> bool:
        """Whether the run has ended (it will not change any more)."""
        return self.status in TERMINAL


class RunPage(View):
    """One page of runs, newest first; pass ``next_before`` as ``before`` for the next."""

    runs: list[Run]
    next_before: str | None


class CancelRequested(View):
    """The cancel was recorded; the run ends ``cancelled`` at its next step or token batch."""

    run_id: str
    cancel_requested: bool = True


class Snapshot(View):
    """Sent instead of events a join missed when they were trimmed away: the run as stored."""

    type: Literal["snapshot"] = "snapshot"
    run_id: str
    last_event_id: str
    run: Run
