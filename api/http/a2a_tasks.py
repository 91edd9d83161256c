"""agentbus runs as A2A tasks: the agent card, task states, and a run's events as task updates.

Built with the official ``a2a-sdk`` protobuf types (``a2a.types``), so what ``POST /a2a``
answers is exactly what A2A clients parse. A task is a run (its id the run id), its context
the run's conversation; the answer is the task's one artifact (``answer``), streamed as
artifact chunks. A run paused at a gate is ``input-required``: the next message on that task
is the decision.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from a2a.types import a2a_pb2 as a2a
from google.protobuf import json_format

from agentbus_contracts import Run
from agentbus_contracts.events import ApprovalRequest, ClientEvent, Done
from api.http.openai_dialect import AnswerStream, step_note

#: A run's final status (or ``running`` / ``suspended``) as the task's state.
STATES: dict[str, a2a.TaskState] = {
    "queued": a2a.TASK_STATE_SUBMITTED,
    "running": a2a.TASK_STATE_WORKING,
    "suspended": a2a.TASK_STATE_INPUT_REQUIRED,
    "done": a2a.TASK_STATE_COMPLETED,
    "cancelled": a2a.TASK_STATE_CANCELED,
    "error": a2a.TASK_STATE_FAILED,
    "timeout": a2a.TASK_STATE_FAILED,
    "rejected": a2a.TASK_STATE_REJECTED,
    "budget_exhausted": a2a.TASK_STATE_FAILED,
}
#: The skills the card names, and the settings each asks with.
SKILLS: dict[str, dict[str, str]] = {
    "single": {"mode": "single"},
    "multi": {"mode": "multi", "accuracy": "accurate"},
    "documents": {"mode": "multi", "accuracy": "standard"},
}
_SKILL_TEXT = {
    "single": ("Answer", "One agent answers, calling tools (calculator, time, web) as it needs."),
    "multi": (
        "Answer, checked",
        "A planner, researcher, critic and verifier: the draft is judged and its figures "
        "recomputed before it is final.",
    ),
    "documents": (
        "Answer from documents",
        "Multi-agent, from the tenant's ingested documents (the caller's ACL groups), with "
        "checked citations.",
    ),
}
ANSWER_ARTIFACT = "answer"


def agent_card(base_url: str, version: str, push: bool) -> dict[str, Any]:
    """The agent card (JSON) served at ``/.well-known/agent-card.json`` (``push``: whether
    push notifications are offered)."""
    skills = [
        a2a.AgentSkill(id=sid, name=name, description=text, tags=[sid], examples=[])
        for sid, (name, text) in _SKILL_TEXT.items()
    ]
    card = a2a.AgentCard(
        name="agentbus",
        description="Questions answered by a team of agents on Redis Streams, with tools "
        "behind one gateway and checked citations.",
        supported_interfaces=[
            a2a.AgentInterface(
                url=f"{base_url}/a2a", protocol_binding="JSONRPC", protocol_version="1.0"
            )
        ],
        version=version,
        capabilities=a2a.AgentCapabilities(streaming=True, push_notifications=push),
        security_schemes={
            "bearer": a2a.SecurityScheme(
                http_auth_security_scheme=a2a.HTTPAuthSecurityScheme(
                    scheme="bearer", description="an agentbus API key"
                )
            )
        },
        security_requirements=[
            a2a.SecurityRequirement(schemes={"bearer": a2a.StringList(list=[])})
        ],
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=skills,
    )
    return json_format.MessageToDict(card)


def agent_message(text: str, task_id: str, context_id: str, message_id: str) -> a2a.Message:
    """A message from the agent on a task."""
    return a2a.Message(
        message_id=message_id,
        task_id=task_id,
        context_id=context_id,
        role=a2a.ROLE_AGENT,
        parts=[a2a.Part(text=text)],
    )


def task_of(
    run: Run,
    *,
    gate: ApprovalRequest | None = None,
    history_length: int | None = None,
    updated_at: datetime | None = None,
    artifacts: bool = True,
) -> a2a.Task:
    """The task a stored run is.

    Args:
        run: the run as the API shows it.
        gate: the approval request a suspended run waits on, if known.
        history_length: the most recent messages of the history to include (None: all of
            them; 0: no history).
        updated_at: when the run last changed: the status's timestamp.
        artifacts: whether to include the answer artifact (``ListTasks`` leaves it out
            unless asked).
    """
    context = run.conversation_id or ""
    other = a2a.TASK_STATE_FAILED if run.finished else a2a.TASK_STATE_WORKING
    status = a2a.TaskStatus(state=STATES.get(run.status, other))
    if updated_at is not None:
        status.timestamp.FromDatetime(updated_at)
    if run.status == "suspended":
        status.message.CopyFrom(_pause_message(run, gate))
    task = a2a.Task(id=run.id, context_id=context, status=status)
    if artifacts and run.answer is not None:
        task.artifacts.append(answer_artifact(run.answer))
    history = history_of(run, gate)
    if history_length is not None:
        history = history[len(history) - history_length :] if history_length > 0 else []
    task.history.extend(history)
    task.metadata.update({"verified": run.verified, "verified_reason": run.verified_reason})
    return task


def history_of(run: Run, gate: ApprovalRequest | None = None) -> list[a2a.Message]:
    """The task's messages, oldest first: the user's question, then what the agent said
    (the gate's question while the run waits on one, the answer once there is one)."""
    context = run.conversation_id or ""
    out: list[a2a.Message] = []
    if run.question is not None:
        question = a2a.Message(
            message_id=f"{run.id}-question",
            task_id=run.id,
            context_id=context,
            role=a2a.ROLE_USER,
            parts=[a2a.Part(text=run.question)],
        )
        out.append(question)
    if run.status == "suspended":
        out.append(_pause_message(run, gate))
    if run.answer is not None:
        out.append(agent_message(run.answer, run.id, context, f"{run.id}-answer"))
    return out


def _pause_message(run: Run, gate: ApprovalRequest | None) -> a2a.Message:
    note = pause_note(gate.reason if gate else None)
    return agent_message(note, run.id, run.conversation_id or "", f"{run.id}-gate")


def answer_artifact(text: str) -> a2a.Artifact:
    """The task's answer (or, streamed, one chunk of it)."""
    return a2a.Artifact(artifact_id=ANSWER_ARTIFACT, name="answer", parts=[a2a.Part(text=text)])


def pause_note(reason: str | None) -> str:
    """What an ``input-required`` status says: the gate and the decisions it takes."""
    if reason == "egress_approval":
        return (
            "The run needs approval to reach a host: reply egress_allow_once, "
            "egress_allow_always or egress_deny."
        )
    return "The answer waits for approval: reply approve or reject."


class TaskUpdates:
    """A run's events as A2A stream responses (status and artifact updates)."""

    def __init__(self, task_id: str, context_id: str) -> None:
        self.task_id, self.context_id = task_id, context_id
        self._answer = AnswerStream()
        self._chunks = 0
        self._notes = 0
        self.answer_so_far = ""  # the answer text the chunks have carried

    def first(self) -> a2a.StreamResponse:
        """The task as the stream starts: working."""
        task = a2a.Task(
            id=self.task_id,
            context_id=self.context_id,
            status=a2a.TaskStatus(state=a2a.TASK_STATE_WORKING),
        )
        return a2a.StreamResponse(task=task)

    def of(self, event: ClientEvent) -> list[a2a.StreamResponse]:
        """The updates for one event: answer text as artifact chunks, steps as status notes."""
        out: list[a2a.StreamResponse] = []
        if event.type not in ("answer", "done", "run_started", "draft_superseded", "step_retry"):
            note = step_note(event)
            return [self._status(a2a.TASK_STATE_WORKING, note)] if note else []
        for delta in self._answer.deltas(event):
            if delta.get("content"):
                out.append(self._chunk(delta["content"]))
            elif delta.get("reasoning_content"):
                out.append(self._status(a2a.TASK_STATE_WORKING, delta["reasoning_content"]))
        return out

    def ended(self, event: ApprovalRequest | Done) -> list[a2a.StreamResponse]:
        """The last updates: the answer's last chunk, then the final (or input-required) state."""
        out = self.of(event)
        if isinstance(event, ApprovalRequest):
            return [*out, self._status(a2a.TASK_STATE_INPUT_REQUIRED, pause_note(event.reason))]
        if self._chunks:
            out.append(self._chunk("", last=True))
        state = STATES.get(event.status, a2a.TASK_STATE_FAILED)
        final = self._status(state, None)
        final.status_update.metadata.update(
            {"verified": event.verified, "verified_reason": event.verified_reason}
        )
        return [*out, final]

    def _chunk(self, text: str, *, last: bool = False) -> a2a.StreamResponse:
        self._chunks += 1
        self.answer_so_far += text
        artifact = answer_artifact(text)
        update = a2a.TaskArtifactUpdateEvent(
            task_id=self.task_id,
            context_id=self.context_id,
            artifact=artifact,
            append=self._chunks > 1,
            last_chunk=last,
        )
        return a2a.StreamResponse(artifact_update=update)

    def _status(self, state: a2a.TaskState, note: str | None) -> a2a.StreamResponse:
        status = a2a.TaskStatus(state=state)
        if note:
            self._notes += 1
            message_id = f"{self.task_id}-note-{self._notes}"
            status.message.CopyFrom(agent_message(note, self.task_id, self.context_id, message_id))
        update = a2a.TaskStatusUpdateEvent(
            task_id=self.task_id, context_id=self.context_id, status=status
        )
        return a2a.StreamResponse(status_update=update)
