"""``/api/v1/runs/{run_id}/resume`` and ``/gate``: decide a run paused at a durable gate."""

from typing import Annotated, Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field

from api.app.gate_actions import Gates
from api.http.responses import GATES, errors
from api.http.routes.common import Caller, use_case

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
_Gates = Annotated[Gates, Depends(use_case(lambda deps: deps.gates))]


@router.post("/{run_id}/resume", response_model=Resumed, responses=_GATE_ERRORS)
async def resume(run_id: str, body: Resume, gates: _Gates, caller: Caller) -> Resumed:
    """Resume a paused run: 404 unknown or another's, 403 an admin on another user's run,
    409 twice, 410 expired."""
    await gates.decide(caller, run_id, body.decision)
    return Resumed(run_id=run_id, decision=body.decision)


@router.get("/{run_id}/gate", responses=_GATE_ERRORS)
async def gate_details(run_id: str, gates: _Gates, caller: Caller) -> dict[str, Any]:
    """The open gate's details with redacted arguments (the ``more_info`` view).

    The caller's own run's gate; an admin may read any of the tenant's (audited).
    """
    return await gates.details(caller, run_id)
