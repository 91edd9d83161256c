"""``/api/v1/runs/{run_id}/resume`` and ``/gate``: decide a run paused at a durable gate."""

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from agents import gates
from api.app.gate_actions import GateProblem
from api.app.oversight import audit_read
from api.http.responses import GATES, errors
from api.http.routes.common import Caller, Deps
from bus.readers import checkpoint_state
from bus.store import GateError, GateNotFound

router = APIRouter(prefix="/api/v1/runs", tags=["gates"])


class Resume(BaseModel):
    """A decision verb; the gate's host and arguments always come from the checkpoint."""

    model_config = ConfigDict(extra="forbid")

    decision: str = Field(
        min_length=1,
        max_length=32,  # the stored decision's bound (bus.store.checkpoints)
        description="approve | reject (answer gate); egress_allow_once | "
        "egress_allow_always | egress_deny (egress gate).",
    )
    conversation_id: str | None = None


class Resumed(BaseModel):
    """The run continues; follow it as before (SSE or websocket join)."""

    run_id: str
    decision: str
    status: str = "running"


_GATE_ERRORS = errors(*GATES)


@router.post("/{run_id}/resume", response_model=Resumed, responses=_GATE_ERRORS)
async def resume(run_id: str, body: Resume, deps: Deps, caller: Caller) -> Resumed:
    """Resume a paused run: 404 unknown or another's, 403 an admin on another user's run,
    409 twice, 410 expired."""
    await deps.gates.decide(caller, run_id, body.decision)
    return Resumed(run_id=run_id, decision=body.decision)


@router.get("/{run_id}/gate", responses=_GATE_ERRORS)
async def gate_details(run_id: str, deps: Deps, caller: Caller) -> dict[str, Any]:
    """The open gate's details with redacted arguments (the ``more_info`` view).

    The caller's own run's gate; an admin may read any of the tenant's (audited).
    """
    if deps.checkpoints is None:
        raise GateProblem.of(GateNotFound("gates need a state store"))
    try:
        info = await gates.more_info(deps.checkpoints, caller.scope, run_id)
    except GateError as e:
        raise GateProblem.of(e) from e
    await audit_read(
        deps.audit, caller, what="read_gate", owners=[info["subject"]], target=run_id, run_id=run_id
    )
    if info["reason"] == "approve_answer":
        # The draft and critique, so a page reopened after a restart can show the card.
        gate = await deps.checkpoints.open_for(caller.scope, run_id)
        state = None if gate is None else checkpoint_state(gate.state, gate.state_version)
        if state is not None:
            info["answer"] = state.draft
            info["critique"] = state.critiques[-1].reason if state.critiques else None
    return info
