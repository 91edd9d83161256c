"""What an A2A push notification says: a ``StreamResponse`` (A2A 1.0, section 4.3.3).

* the run paused at a gate: a ``statusUpdate``, ``input-required``, whose message says
  which decisions the task takes (sent as the next message on the task);
* the run ended: the ``task`` in its final state, with the answer as its ``answer``
  artifact and ``verified`` / ``verified_reason`` in its metadata.

Built with the official ``a2a-sdk`` protobuf types, as the ``/a2a`` endpoint answers.
"""

from __future__ import annotations

from a2a.types import a2a_pb2 as a2a
from google.protobuf import json_format

from bus.events import ApprovalRequest, Done, parse_event
from gateway.webhooks.schedule import WebhookSpec

#: The ``type`` of a push delivery (``GET /runs/{id}/deliveries``).
TASK_UPDATE = "a2a.task_update"

_FINAL: dict[str, a2a.TaskState] = {
    "done": a2a.TASK_STATE_COMPLETED,
    "cancelled": a2a.TASK_STATE_CANCELED,
    "rejected": a2a.TASK_STATE_REJECTED,
}
_DECISIONS = {
    "approve_answer": "approve or reject",
    "egress_approval": "egress_allow_once, egress_allow_always or egress_deny",
}
_MARKERS = (b'"done"', b'"approval_request"')


def notification(spec: WebhookSpec, run_id: str, data: bytes) -> tuple[bytes, bool] | None:
    """(body, run finished) of the push notification an event makes, if it makes one."""
    if not any(m in data for m in _MARKERS):
        return None
    event = parse_event(data)
    if isinstance(event, Done):
        return _dump(a2a.StreamResponse(task=_final(spec, run_id, event))), True
    if isinstance(event, ApprovalRequest):
        return _dump(a2a.StreamResponse(status_update=_paused(spec, run_id, event))), False
    return None


def _final(spec: WebhookSpec, run_id: str, event: Done) -> a2a.Task:
    status = a2a.TaskStatus(state=_FINAL.get(event.status, a2a.TASK_STATE_FAILED))
    status.timestamp.FromSeconds(int(event.ts))
    task = a2a.Task(id=run_id, context_id=spec.conversation_id or "", status=status)
    if event.answer is not None:
        part = a2a.Part(text=event.answer)
        task.artifacts.append(a2a.Artifact(artifact_id="answer", name="answer", parts=[part]))
    task.metadata.update({"verified": event.verified, "verified_reason": event.verified_reason})
    return task


def _paused(spec: WebhookSpec, run_id: str, event: ApprovalRequest) -> a2a.TaskStatusUpdateEvent:
    context = spec.conversation_id or ""
    decisions = _DECISIONS.get(event.reason)
    text = (
        f"The run waits at a gate ({event.reason}): reply {decisions}."
        if decisions
        else f"The run waits at a gate ({event.reason})."
    )
    note = a2a.Message(
        message_id=f"{run_id}-gate",
        task_id=run_id,
        context_id=context,
        role=a2a.ROLE_AGENT,
        parts=[a2a.Part(text=text)],
    )
    status = a2a.TaskStatus(state=a2a.TASK_STATE_INPUT_REQUIRED, message=note)
    status.timestamp.FromSeconds(int(event.ts))
    return a2a.TaskStatusUpdateEvent(task_id=run_id, context_id=context, status=status)


def _dump(message: a2a.StreamResponse) -> bytes:
    return json_format.MessageToJson(message, indent=None).encode()
