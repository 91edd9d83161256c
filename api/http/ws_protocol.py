"""The websocket protocol of ``/api/v1/ws``: frames, close codes, the origin check.

Every frame is one JSON object with a ``type``.

Client → server:

==========  ===========================================================================
``auth``    ``{"api_key"}``: only when no ``Authorization: Bearer`` header was sent; must
            be the first frame, within 10 s.
``ask``     ``{"question", "conversation_id"?, "parent_message_id"?, "settings"?: {"mode",
            "accuracy", "think", "use_tools", "approve_high_risk", "approve_critical",
            "multitask"}, "webhook_url"?, "webhook_approvals"?, "request_id"?}``
``join``    ``{"run_id", "last_event_id"?}``: the events after that id, then live ones.
``cancel``  ``{"run_id"}``
``resume``  ``{"run_id", "decision", "conversation_id"?}``: decide a run paused at a gate.
``ping``    ``{}``
==========  ===========================================================================

Server → client: ``ready`` (authenticated), ``accepted`` (an ask was published:
``run_id``, ``conversation_id``; ``queued`` and ``ahead`` when it waits its turn), the
run's events (``run_started`` … ``done``, each with its stream ``id`` and ``run_id``),
``snapshot`` (``run``, ``last_event_id``: the missed events are gone),
``cancel_requested``, ``pong``, ``request_error`` (``code``, ``message``, ``hint``; the
connection stays open) and ``slow_consumer`` (``runs``: the
last id sent per run; the server then closes with 4409 — join again with those ids).
Replies echo the ``request_id`` of the frame they answer.
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from agentbus_contracts.ids import MAX_MESSAGE_ID, RUN_ID_PATTERN
from agentbus_contracts.questions import QuestionSettings, TraceContext

EVENT_ID_PATTERN = r"^\d{1,20}-\d{1,20}$"
AUTH_TIMEOUT_S = 10.0
SEND_TIMEOUT_S = 10.0
MAX_RUNS_PER_CONNECTION = 32

CLOSE_ORIGIN = 1008  # before the handshake completes: the client sees HTTP 403
CLOSE_TOO_BIG = 1009
CLOSE_UNAUTHORIZED = 4401
CLOSE_IDLE = 4408
CLOSE_SLOW = 4409

RequestId = Annotated[str | None, Field(default=None, max_length=64)]


class _Frame(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AuthFrame(_Frame):
    """Authenticate a connection opened without an Authorization header."""

    type: Literal["auth"]
    api_key: str = Field(max_length=256)


class AskFrame(_Frame):
    """Ask a question; the run's events follow on this connection."""

    type: Literal["ask"]
    question: str = Field(min_length=1)
    conversation_id: str | None = Field(default=None, pattern=RUN_ID_PATTERN)
    parent_message_id: int | None = Field(
        default=None,
        ge=0,
        le=MAX_MESSAGE_ID,
        description="Branch the conversation here (see POST /runs).",
    )
    settings: QuestionSettings = QuestionSettings()
    webhook_url: str | None = Field(default=None, max_length=2048)
    webhook_approvals: bool = False
    request_id: RequestId = None
    trace: TraceContext | None = Field(
        default=None, description="The caller's W3C trace context (else the handshake's)."
    )


class JoinFrame(_Frame):
    """Follow a run: the events after ``last_event_id``, then the live ones."""

    type: Literal["join"]
    run_id: str = Field(pattern=RUN_ID_PATTERN)
    last_event_id: str = Field(default="0-0", pattern=EVENT_ID_PATTERN)
    request_id: RequestId = None


class CancelFrame(_Frame):
    """Cancel a run."""

    type: Literal["cancel"]
    run_id: str = Field(pattern=RUN_ID_PATTERN)
    request_id: RequestId = None


class ResumeFrame(_Frame):
    """Decide a paused run's gate (the verb only; host and arguments come from the store)."""

    type: Literal["resume"]
    run_id: str = Field(pattern=RUN_ID_PATTERN)
    decision: str = Field(min_length=1, max_length=32)
    conversation_id: str | None = Field(default=None, pattern=RUN_ID_PATTERN)
    request_id: RequestId = None


class PingFrame(_Frame):
    """Keep the connection alive; answered with ``pong``."""

    type: Literal["ping"]
    request_id: RequestId = None


ClientFrame = Annotated[
    AuthFrame | AskFrame | JoinFrame | CancelFrame | ResumeFrame | PingFrame,
    Field(discriminator="type"),
]
CLIENT_FRAME: TypeAdapter[ClientFrame] = TypeAdapter(ClientFrame)


def _frame_types() -> frozenset[str]:
    union = get_args(ClientFrame)[0]
    return frozenset(get_args(m.model_fields["type"].annotation)[0] for m in get_args(union))


#: Every client frame's ``type``, read off the frame models (a hand-kept copy went stale).
FRAME_TYPES = _frame_types()


def origin_allowed(origin: str | None, host: str | None, allowed_csv: str) -> bool:
    """Whether a browser from ``origin`` may open the websocket.

    No Origin header means no browser (another server, a CLI): the API key alone decides.
    A browser must come from the API's own host or from a configured origin, so a page
    elsewhere cannot ride on credentials the browser holds for this one.
    """
    if origin is None:
        return True
    allowed = {o.strip().rstrip("/").lower() for o in allowed_csv.split(",") if o.strip()}
    origin = origin.strip().rstrip("/").lower()
    if "*" in allowed or origin in allowed:
        return True
    return host is not None and urlsplit(origin).netloc == host.lower()
