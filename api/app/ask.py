"""What starting a run takes and gives back (`api.app.starter.RunStarter`): the question
with its settings (`Ask`), the run checked and placed, ready to publish (`RunToPublish`),
and the run that was published or queued (`Started`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from api.app.webhook_requests import WebhookRequest
from bus.commands import TraceContext
from bus.run_state import ClientTool, Priority, QuestionSettings
from bus.team_run import PinnedTeam

if TYPE_CHECKING:
    from api.app.auth import Principal
    from bus.run_state import RunSettings


@dataclass(frozen=True, slots=True)
class Ask:
    """A question to start a run with."""

    question: str
    conversation_id: str | None = None
    settings: QuestionSettings = field(default_factory=QuestionSettings)
    run_id: str | None = None
    reply_to: str | None = None
    webhook: WebhookRequest | None = None
    trace: TraceContext | None = None
    """The caller's W3C trace context: the run's trace continues it."""
    sources: list[str] | None = None
    """``agentbus ask --sources``: the run's retrieval sources (None: the tenant's, else
    those that exist). Over the API they come from the tenant's settings only."""
    human_gate: bool = False
    """``agentbus ask --human-gate``: approve this run's answer (the API: tenant settings)."""
    priority: Priority = "interactive"
    """Batch work (``runs.questions``) is admitted after interactive runs (`bus.fairshare`)."""
    answer_schema: dict[str, Any] | None = None
    """The OpenAI endpoint's ``response_format``: the answer is a JSON document valid
    against this JSON Schema (`bus.run_state.RunSettings.answer_schema`)."""
    client_tools: list[ClientTool] | None = None
    """Tools the client declared and runs itself (OpenAI ``tools``, AG-UI's): offered to the
    researcher; a call of one pauses the run for the client's result."""
    tool_required: bool = False
    """The client asked for a tool call (OpenAI ``tool_choice: required``)."""
    parent_message_id: int | None = None
    """The message the question follows, to branch the conversation there (an edited
    question, another answer): an answer of the conversation, or 0 for its start. None:
    the end of the active branch."""
    team: PinnedTeam | None = None
    """The team ``settings.team`` names, pinned at admission (`api.app.team_runs`)."""


@dataclass(frozen=True, slots=True)
class RunToPublish:
    """A run the starter has checked and placed, ready to publish.

    Attributes:
        who: the caller.
        ask: what they asked.
        run_id: the run's id.
        conversation_id: its conversation.
        settings: the run's settings, resolved.
        shard: the bus shard its keys live on.
        deadline: when it must end (epoch seconds).
        weight: the tenant's fair-share weight.
        version: the tenant's settings version the caller's key was cached at, to check as
            the run is published (None: checked before; only for a run whose conversation
            and id were drawn now, which nothing can have queued or stored yet).
    """

    who: Principal
    ask: Ask
    run_id: str
    conversation_id: str
    settings: RunSettings
    shard: int
    deadline: float
    weight: int = 1
    version: int | None = None


@dataclass(frozen=True, slots=True)
class Started:
    """A run that was published (or had been, for a retry)."""

    run_id: str
    conversation_id: str
    shard: int
    replayed: bool = False
    queued: bool = False
    """It waits for the conversation's running run to end (``multitask``)."""
    ahead: int = 0
    """How many runs of the conversation run or wait before it."""
