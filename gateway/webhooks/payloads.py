"""What a webhook says: the run's final result, or an approval request, as a JSON document.

Every body is ``{"type", "timestamp", "data"}`` (the Standard Webhooks payload shape):

* ``run.completed``: ``data`` = run id, conversation id, status, answer, usage, stop reason;
* ``run.approval_requested`` (only when the question asked for them): the gate's reason,
  the draft answer or the blocked host and tool, and how to resume the run.

The body is built once, when the event is seen, and stored; every retry sends the same bytes.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from bus.events import ApprovalRequest, ClientEvent, Done, parse_event
from gateway.webhooks.schedule import WebhookSpec

COMPLETED = "run.completed"
APPROVAL_REQUESTED = "run.approval_requested"

_DECISIONS = {
    "approve_answer": ["approve", "reject"],
    "egress_approval": ["egress_allow_once", "egress_allow_always", "egress_deny"],
}
# A cheap test before parsing: only these two event types ever become webhooks.
_MARKERS = (b'"done"', b'"approval_request"')


def delivery_id(run_id: str, event_id: str) -> str:
    """The ``webhook-id`` of the message made from one event: the same on every retry."""
    return f"msg_{run_id}_{event_id}"


def message_for(spec: WebhookSpec, data: bytes) -> tuple[str, bytes, bool] | None:
    """(type, body, run finished) for an event the webhook wants, else None."""
    if not any(m in data for m in _MARKERS):
        return None
    event = parse_event(data)
    if isinstance(event, Done):
        return COMPLETED, _body(COMPLETED, event, _completed(spec, event)), True
    if isinstance(event, ApprovalRequest) and spec.approvals:
        return APPROVAL_REQUESTED, _body(APPROVAL_REQUESTED, event, _approval(spec, event)), False
    return None


def _completed(spec: WebhookSpec, event: Done) -> dict[str, Any]:
    return {
        "run_id": event.run_id,
        "conversation_id": spec.conversation_id,
        "status": event.status,
        "answer": event.answer,
        "usage": event.usage,
        "stop_reason": event.stop_reason,
    }


def _approval(spec: WebhookSpec, event: ApprovalRequest) -> dict[str, Any]:
    return {
        "run_id": event.run_id,
        "conversation_id": spec.conversation_id,
        "reason": event.reason,
        "answer": event.answer,
        "blocked_host": event.blocked_host,
        "tool": event.tool,
        "resume": {
            "method": "POST",
            "path": f"/api/v1/runs/{event.run_id}/resume",
            "decisions": _DECISIONS.get(event.reason, []),
        },
    }


def _body(type: str, event: ClientEvent, data: dict[str, Any]) -> bytes:
    when = datetime.fromtimestamp(event.ts, UTC).isoformat().replace("+00:00", "Z")
    doc = {"type": type, "timestamp": when, "data": data}
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()
