"""A run's events as AG-UI events (``POST /api/v1/ag-ui``), built with the official models.

One `AgUiEvents` per streamed response turns each agentbus event into the AG-UI events a
front-end renders:

* the answer as one text message (start, content, end). In single mode the tokens are sent
  as they stream; in multi and custom modes a judge may send a draft back, and text sent
  cannot be taken back, so the drafts stream as reasoning and the answer, as the store
  keeps it, is sent as the text message when the run is done (as on the OpenAI endpoint);
* reasoning tokens, step notes and drafts as one reasoning message;
* tool calls as tool call start, args, end and result (ids ``{run}:{call}``, as
  `api.app.client_tools` makes them); a call of a tool the front end declared has no
  result here, and the run finishes (success, ``result.tool_calls`` naming the calls): the
  front end runs them and its next run input, ending with their tool messages, resumes it;
* the plan, critiques, verdicts and citations as state snapshots (``{"plan": [...],
  "critiques": [...], "verdicts": [...], "citations": [...]}``);
* a gate as the end of the run with an interrupt outcome, whose id the client sends back
  in ``resume`` (see ``api.http.routes.ag_ui``);
* the end: run finished (success with the answer and what the judges concluded, or
  cancelled), or run error with the run's final status as the code.
"""

from __future__ import annotations

import json
from typing import Any

from ag_ui.core import (
    BaseEvent,
    Interrupt,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StateSnapshotEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from agentbus_contracts.events import ApprovalRequest, ClientEvent, Done, ErrorEvent
from api.app.client_tools import client_call_id
from api.http.openai_dialect import AnswerStream

#: A tool result's status when the client runs the tool (`gateway.outcome.OutcomeStatus`).
CLIENT_PENDING = "client_pending"
#: What the client sends back in a resume entry's payload for each gate.
DECISIONS: dict[str, list[str]] = {
    "approve_answer": ["approve", "reject"],
    "egress_approval": ["egress_allow_once", "egress_allow_always", "egress_deny"],
}
#: The decision a resume entry with status ``cancelled`` stands for.
CANCEL_DECISION = {"approve_answer": "reject", "egress_approval": "egress_deny"}


def interrupt_id(run_id: str, reason: str) -> str:
    """The id of a gate's interrupt: the run and the gate (``run_id:reason``)."""
    return f"{run_id}:{reason}"


class AgUiEvents:
    """AG-UI events for one streamed response of one agentbus run."""

    def __init__(self, thread_id: str, run_id: str, agentbus_run_id: str) -> None:
        self.thread_id, self.run_id, self.agentbus_run_id = thread_id, run_id, agentbus_run_id
        self._answer = AnswerStream()
        self._text_open = False
        self._texts = 0  # text messages started (a new one after reasoning came between)
        self._reasoning_open = False
        self._reasonings = 0
        self._state: dict[str, list[Any]] = {"plan": [], "critiques": [], "verdicts": []}
        self._error: ErrorEvent | None = None

    @property
    def _text_id(self) -> str:
        return f"{self.agentbus_run_id}-answer-{self._texts}"

    @property
    def _reasoning_id(self) -> str:
        return f"{self.agentbus_run_id}-reasoning-{self._reasonings}"

    def started(self) -> BaseEvent:
        """The first event of the response."""
        meta = {"agentbus_run_id": self.agentbus_run_id}
        return RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id, metadata=meta)

    def of(self, event: ClientEvent) -> list[BaseEvent]:
        """The AG-UI events for one agentbus event."""
        match event.type:
            case "plan":
                return self._snapshot("plan", list(event.steps))
            case "critique":
                review = {"verdict": event.verdict, "reason": event.reason}
                return self._snapshot("critiques", [*self._state["critiques"], review])
            case "verdict":
                review = {"verdict": event.verdict, "reasons": list(event.reasons)}
                return self._snapshot("verdicts", [*self._state["verdicts"], review])
            case "citations":
                return self._snapshot("citations", [c.model_dump() for c in event.items])
            case "tool_call":
                call = client_call_id(self.agentbus_run_id, event.call_id)
                return [
                    ToolCallStartEvent(tool_call_id=call, tool_call_name=event.tool),
                    ToolCallArgsEvent(tool_call_id=call, delta=json.dumps(event.args)),
                    ToolCallEndEvent(tool_call_id=call),
                ]
            case "tool_result" if event.status == CLIENT_PENDING:
                return []  # the client runs it: its result comes in the next run input
            case "tool_result":
                content = json.dumps(event.result) if event.status == "ok" else event.message
                return [
                    ToolCallResultEvent(
                        message_id=f"{self.agentbus_run_id}-{event.call_id}-result",
                        tool_call_id=client_call_id(self.agentbus_run_id, event.call_id),
                        content=content or event.code,
                        role="tool",
                    )
                ]
            case "error":
                self._error = event
                return []
            case "reasoning":
                return self._reasoning(event.delta)
            case _:
                pass
        out: list[BaseEvent] = []
        for delta in self._answer.deltas(event):
            if "content" in delta:
                out += self._text(delta["content"])
            else:
                out += self._reasoning(delta["reasoning_content"])
        return out

    def ended(self, event: ApprovalRequest | Done) -> list[BaseEvent]:
        """The events that close the response: the messages, then finished or error."""
        out = [*self.of(event), *self._close()]
        if isinstance(event, ApprovalRequest) and event.reason == "client_tool":
            # The calls were sent as tool calls: the client runs them and sends the results
            # as tool messages in its next run input, which resumes the run.
            waiting = [client_call_id(self.agentbus_run_id, c.id) for c in event.calls or ()]
            result = {"agentbus_run_id": self.agentbus_run_id, "tool_calls": waiting}
            return [
                *out,
                self._finished(outcome=RunFinishedSuccessOutcome(type="success"), result=result),
            ]
        if isinstance(event, ApprovalRequest):
            gate = Interrupt(
                id=interrupt_id(self.agentbus_run_id, event.reason),
                reason=event.reason,
                message=event.critique or "the run paused for a person's decision",
                response_schema={
                    "type": "object",
                    "properties": {"decision": {"enum": DECISIONS[event.reason]}},
                    "required": ["decision"],
                },
                metadata={"answer": event.answer, "tool": event.tool, "host": event.blocked_host},
            )
            outcome = RunFinishedInterruptOutcome(type="interrupt", interrupts=[gate])
            return [*out, self._finished(outcome=outcome)]
        if event.status == "done":
            result = {
                "answer": event.answer,
                "verified": event.verified,
                "verified_reason": event.verified_reason,
                "agentbus_run_id": self.agentbus_run_id,
            }
            outcome = RunFinishedSuccessOutcome(type="success")
            return [*out, self._finished(outcome=outcome, result=result)]
        if event.status == "cancelled":
            return [*out, self._finished(outcome=RunFinishedCancelledOutcome(type="cancelled"))]
        why = f": {self._error.message}" if self._error else ""
        message = f"the run {self.agentbus_run_id} ended {event.status}{why}"
        return [*out, RunErrorEvent(message=message, code=f"run_{event.status}")]

    def _finished(self, **fields: Any) -> BaseEvent:
        return RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id, **fields)

    def _snapshot(self, part: str, value: list[Any]) -> list[BaseEvent]:
        self._state[part] = value
        return [StateSnapshotEvent(snapshot=dict(self._state))]

    def _text(self, delta: str) -> list[BaseEvent]:
        if not delta:
            return []
        out = self._close_reasoning()
        if not self._text_open:
            self._text_open, self._texts = True, self._texts + 1
            out.append(TextMessageStartEvent(message_id=self._text_id, role="assistant"))
        out.append(TextMessageContentEvent(message_id=self._text_id, delta=delta))
        return out

    def _reasoning(self, delta: str) -> list[BaseEvent]:
        if not delta:
            return []
        out = self._close_text()
        if not self._reasoning_open:
            self._reasoning_open, self._reasonings = True, self._reasonings + 1
            out += [
                ReasoningStartEvent(message_id=self._reasoning_id),
                ReasoningMessageStartEvent(message_id=self._reasoning_id, role="reasoning"),
            ]
        out.append(ReasoningMessageContentEvent(message_id=self._reasoning_id, delta=delta))
        return out

    def _close(self) -> list[BaseEvent]:
        return [*self._close_reasoning(), *self._close_text()]

    def _close_reasoning(self) -> list[BaseEvent]:
        if not self._reasoning_open:
            return []
        self._reasoning_open = False
        return [
            ReasoningMessageEndEvent(message_id=self._reasoning_id),
            ReasoningEndEvent(message_id=self._reasoning_id),
        ]

    def _close_text(self) -> list[BaseEvent]:
        if not self._text_open:
            return []
        self._text_open = False
        return [TextMessageEndEvent(message_id=self._text_id)]
