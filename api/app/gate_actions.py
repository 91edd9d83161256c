"""Resuming a paused run, shared by REST (``POST .../resume``) and the websocket frame."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents import gates
from api.app.auth import Principal
from api.app.errors import ApiError, Kind
from api.app.oversight import audit_read
from api.app.ports import Resumes
from bus.readers import checkpoint_state
from bus.store import (
    AuditStore,
    CheckpointStore,
    GateConflict,
    GateError,
    GateExpired,
    GateForbidden,
    GateNotFound,
)

_KINDS: dict[type[GateError], Kind] = {
    GateNotFound: Kind.NOT_FOUND,
    GateForbidden: Kind.FORBIDDEN,
    GateConflict: Kind.CONFLICT,
    GateExpired: Kind.GONE,
}
_HINTS: dict[type[GateError], str] = {
    GateNotFound: "check the run id; only the user who started a run can resume it",
    GateForbidden: "only the user who started the run can decide its gate",
    GateConflict: "this gate was already decided; join the run to follow it",
    GateExpired: "the gate expired; ask the question again",
}


class GateProblem(ApiError):
    """A resume that cannot go ahead; its code and status say why."""

    code = "gate_error"

    @classmethod
    def of(cls, error: GateError | gates.BadDecision) -> GateProblem:
        """The API error for a store or decision error (not found, forbidden, conflict,
        gone, invalid)."""
        problem = cls(str(error).split(" (")[0])
        problem.code = error.code
        if isinstance(error, gates.BadDecision):
            problem.kind, problem.hint = Kind.INVALID, error.hint
        else:
            problem.kind = _KINDS.get(type(error), Kind.CONFLICT)
            problem.hint = _HINTS.get(type(error), "")
        return problem


@dataclass(frozen=True, kw_only=True)
class Gates:
    """Paused runs: a gate's details, and resuming with its decision or a client's tools.

    Attributes:
        resumes: continues paused runs; None without a state store, where no run ever
            pauses and every resume answers "not found".
        checkpoints: the paused runs (None: no state store).
        audit: where an admin's read of another user's gate is recorded.
    """

    resumes: Resumes | None
    checkpoints: CheckpointStore | None
    audit: AuditStore | None

    def _resumes(self) -> Resumes:
        if self.resumes is None:
            raise GateProblem.of(GateNotFound("gates need a state store"))
        return self.resumes

    async def decide(self, who: Principal, run_id: str, decision: str) -> None:
        """Resume ``run_id`` as ``who`` with ``decision`` (the gate's details come from SQL)."""
        resumes = self._resumes()
        try:
            await resumes.decide(who.scope, who.groups, run_id, decision)
        except (GateError, gates.BadDecision) as e:
            raise GateProblem.of(e) from e

    async def client_tools(self, who: Principal, run_id: str, results: dict[str, str]) -> None:
        """Resume ``run_id`` as ``who`` with its client's tool ``results`` (by call id)."""
        resumes = self._resumes()
        try:
            await resumes.client_tools(who.scope, who.groups, run_id, results)
        except (GateError, gates.BadDecision) as e:
            raise GateProblem.of(e) from e

    async def details(self, who: Principal, run_id: str) -> dict[str, Any]:
        """The open gate's details with redacted arguments (the ``more_info`` view): the
        caller's own run's gate; an admin may read any of the tenant's (audited)."""
        if self.checkpoints is None:
            raise GateProblem.of(GateNotFound("gates need a state store"))
        try:
            info = await gates.more_info(self.checkpoints, who.scope, run_id)
        except GateError as e:
            raise GateProblem.of(e) from e
        await audit_read(
            self.audit, who, what="read_gate", owners=[info["subject"]], target=run_id,
            run_id=run_id,
        )  # fmt: skip
        if info["reason"] == "approve_answer":
            # The draft and critique, so a page reopened after a restart can show the card.
            gate = await self.checkpoints.open_for(who.scope, run_id)
            state = None if gate is None else checkpoint_state(gate.state, gate.state_version)
            if state is not None:
                info["answer"] = state.draft
                info["critique"] = state.critiques[-1].reason if state.critiques else None
        return info
