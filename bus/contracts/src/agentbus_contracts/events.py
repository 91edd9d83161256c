"""Run events: the typed frames written to ``run:{id}:events`` and relayed to clients.

Declared here, in the contracts' distribution, and nowhere else: the server's workers emit
these very classes (``bus.events`` re-exports them) and the client decodes them. They depend
on pydantic alone. Token events carry the ``step_id`` that produced them, so a client that
sees a ``step_retry`` for that step drops its partial text (``bus.transcript`` folds them).
"""

from __future__ import annotations

import json
import time
from typing import Annotated, Any, Literal, cast, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from agentbus_contracts.versions import Upcaster, read_tolerant, upcast

#: The version every event carries (``schema_version``); a change that breaks readers bumps it.
SCHEMA_VERSION: Literal[1] = 1

#: How a run ended: what its ``done`` event carries (a plain string on the wire).
FinalStatus = Literal["done", "error", "timeout", "cancelled", "rejected", "budget_exhausted"]

#: The statuses a run ends in, as strings (``Run.finished`` reads them).
FINAL_STATUSES: frozenset[str] = frozenset(get_args(FinalStatus))

CritiqueVerdict = Literal["OK", "REVISE", "REPLAN", "UNKNOWN"]
"""What the critic can answer (``UNKNOWN``: its reply could not be read; never an OK)."""

VerifierVerdict = Literal["pass", "needs_revision", "fail", "unknown"]
"""What the verifier can answer (``unknown``: its output could not be read; never a pass)."""


class Frame(BaseModel):
    """Base of every event and its parts: immutable, no unknown fields (a misspelt field
    fails where the event is made, in the worker)."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Event(Frame):
    """Fields every client event has."""

    schema_version: Literal[1] = SCHEMA_VERSION
    run_id: str
    step_id: str | None = None
    agent: str | None = None
    ts: float = Field(default_factory=time.time)


class RunStarted(Event):
    """The run was admitted."""

    type: Literal["run_started"] = "run_started"
    question: str
    mode: str = "single"
    conversation_id: str | None = None


class Interpreted(Event):
    """A follow-up rewritten into a standalone request."""

    type: Literal["interpreted"] = "interpreted"
    text: str


class Plan(Event):
    """The planner's plan."""

    type: Literal["plan"] = "plan"
    steps: list[str]


class Reasoning(Event):
    """A batch of reasoning tokens."""

    type: Literal["reasoning"] = "reasoning"
    delta: str


class Answer(Event):
    """A batch of answer tokens."""

    type: Literal["answer"] = "answer"
    delta: str
    attempt: int = Field(
        default=0, ge=0, description="The draft it belongs to (0 first; multi mode retries)."
    )


class ToolCallStarted(Event):
    """A tool call sent to the gateway (arguments already redacted)."""

    type: Literal["tool_call"] = "tool_call"
    call_id: str
    tool: str
    args: dict[str, Any] = {}


class ToolResult(Event):
    """A tool call's outcome."""

    type: Literal["tool_result"] = "tool_result"
    call_id: str
    tool: str
    status: str
    code: str
    message: str = ""
    result: Any = None
    truncated: bool = False
    blocked_host: str | None = None
    duration_ms: float | None = None


class Critique(Event):
    """The critic's review (shown, never applied to the answer)."""

    type: Literal["critique"] = "critique"
    verdict: CritiqueVerdict
    reason: str = ""


class Verdict(Event):
    """The verifier's schema-checked verdict."""

    type: Literal["verdict"] = "verdict"
    verdict: VerifierVerdict
    reasons: list[str] = []


class Citation(Frame):
    """One kept citation."""

    ref: int
    source: str
    title: str = ""
    snippet: str = ""
    source_kind: str = "documents"


class Citations(Event):
    """The citations kept after checking them against what was retrieved."""

    type: Literal["citations"] = "citations"
    items: list[Citation]
    stripped: int = 0


def _is_none(value: object) -> bool:
    return value is None


class ClientToolCall(Frame):
    """A call of a client-declared tool the client is to run: the id its result must echo."""

    id: str
    name: str
    arguments: dict[str, Any] = {}


class ApprovalRequest(Event):
    """The run paused at a gate and waits for a decision (``client_tool``: for the results
    of the client-declared tools it called, listed in ``calls``)."""

    type: Literal["approval_request"] = "approval_request"
    reason: Literal["approve_answer", "egress_approval", "client_tool"]
    answer: str | None = None
    critique: str | None = None
    blocked_host: str | None = None
    tool: str | None = None
    args: dict[str, Any] | None = None
    calls: list[ClientToolCall] | None = Field(
        default=None,
        # Only on a client_tool gate: the other gates' requests read as they always did.
        exclude_if=_is_none,
        description="With reason client_tool: the calls the client is to run.",
    )


class DraftSuperseded(Event):
    """A judge sent the run back: the answer text of draft ``attempt`` is not the answer;
    a client replaces it with the next attempt's."""

    type: Literal["draft_superseded"] = "draft_superseded"
    attempt: int = Field(ge=0)
    reason: str = ""


class StepRetry(Event):
    """A step is run again: drop the partial tokens it streamed before."""

    type: Literal["step_retry"] = "step_retry"
    delivery: int


class ErrorEvent(Event):
    """Something went wrong; a ``done`` event with the final status follows."""

    type: Literal["error"] = "error"
    code: str
    message: str
    budget: str | None = Field(
        default=None,
        description="With code budget_exhausted: the budget that was spent (run_tokens, "
        "run_cost_usd, user_day_tokens, user_day_cost_usd, tenant_month_tokens, "
        "tenant_month_cost_usd).",
    )


class Done(Event):
    """The last event of every run."""

    type: Literal["done"] = "done"
    status: FinalStatus
    answer: str | None = None
    usage: dict[str, int] = {}
    cost_usd: float | None = Field(
        default=None, description="The run's model cost (AGENTBUS_LLM_PRICES); None unpriced."
    )
    stop_reason: str | None = Field(
        default=None, description="e.g. tool_loop_exhausted when the answer is a fallback"
    )
    verified: bool | None = Field(
        default=None,
        description="What a check established: true (a tool recomputed the answer's "
        "figures and they matched, or a judge whose precision is measured for the model "
        "approved), false (the last judge asked for changes), null (unknown: nothing "
        "established it, a judge could not tell, or no judge ran).",
    )
    verified_reason: str | None = Field(default=None, description="Why, in a sentence.")


ClientEvent = Annotated[
    RunStarted
    | Interpreted
    | Plan
    | Reasoning
    | Answer
    | ToolCallStarted
    | ToolResult
    | Critique
    | Verdict
    | Citations
    | ApprovalRequest
    | DraftSuperseded
    | StepRetry
    | ErrorEvent
    | Done,
    Field(discriminator="type"),
]

CLIENT_EVENT: TypeAdapter[ClientEvent] = TypeAdapter(ClientEvent)


#: Upcasters of events from an older ``schema_version`` (version k to k+1): none yet.
EVENT_UPCASTERS: dict[int, Upcaster] = {}


def parse_event(raw: str | bytes) -> ClientEvent:
    """Decode one event from its JSON form (a newer release's extra fields are ignored)."""
    try:
        return CLIENT_EVENT.validate_json(raw)
    except ValidationError:
        try:
            doc = json.loads(raw)
        except ValueError:
            doc = None
        if not isinstance(doc, dict):
            raise  # not a JSON object: the original error
    return event_from_doc(cast("dict[str, Any]", doc))


def event_from_doc(doc: dict[str, Any]) -> ClientEvent:
    """An event from its decoded JSON: upcast from its version, unknown fields ignored."""
    version = doc.get("schema_version", SCHEMA_VERSION)
    current = upcast(
        doc,
        contract="event",
        version=version if isinstance(version, int) else SCHEMA_VERSION,
        current=SCHEMA_VERSION,
        chain=EVENT_UPCASTERS,
    )
    return read_tolerant(CLIENT_EVENT.validate_python, current, contract="event")
