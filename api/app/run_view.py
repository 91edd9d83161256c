"""How a run is shown: the REST API's run and the snapshot a late joiner gets.

A stored run becomes the wire model the client reads (`agentbus_contracts.Run`), so the
routes answer with it as it is and nothing is re-validated from a dict.
"""

from __future__ import annotations

from agentbus_contracts import Run
from bus.events import RunStatus
from bus.run_state import usage_cost
from bus.store import RunRecord
from bus.transcript import partial_answer


def describe(run_id: str, record: RunRecord | None) -> Run:
    """A run as the REST API and snapshots show it (``queued`` until intake stored it)."""
    return Run.model_validate(_fields(run_id, record))


def _fields(run_id: str, record: RunRecord | None) -> dict[str, object]:
    if record is None:
        return {"id": run_id, "status": "queued"}
    return {
        "id": record.id,
        "subject": record.subject,
        "status": record.status.value,
        "mode": record.mode,
        "question": record.question,
        "answer": record.answer,
        "error_code": record.error_code,
        "conversation_id": record.conversation_id,
        "created_at": record.created_at.isoformat(),
        "finished_at": record.finished_at.isoformat() if record.finished_at else None,
        "trace": record.trace,
        "usage": record.usage,
        "cost_usd": usage_cost(record.usage),
        "verified": record.verified,
        "verified_reason": record.verified_reason,
        **_partial(record),
    }


def _partial(record: RunRecord) -> dict[str, object]:
    """A run that ended other than ``done``: marked partial, with what it wrote of its answer."""
    if not record.is_terminal or record.status is RunStatus.DONE:
        return {"partial": False, "partial_answer": None}
    return {"partial": True, "partial_answer": partial_answer(record.trace)}
