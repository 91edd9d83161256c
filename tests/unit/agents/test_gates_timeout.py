"""A resumed run keeps its own (its tenant's) timeout, not the deployment's."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from agents.gates import continuation
from bus.run_state import RunSettings, RunState
from bus.store import CheckpointRecord, GateReason


def paused(settings: RunSettings) -> CheckpointRecord:
    state = RunState(question="q", draft="a", settings=settings)
    return CheckpointRecord(
        id="g1",
        run_id="run-1",
        tenant_id="t1",
        subject="alice",
        reason=GateReason.APPROVE_ANSWER,
        step=4,
        state=state.model_dump(mode="json"),
        expires_at=datetime.now(UTC) + timedelta(hours=1),
    )


def test_a_resumed_run_gets_its_tenants_timeout_again() -> None:
    gated = RunSettings(mode="multi", human_gate=True, timeout_s=1200)
    resumed = continuation(paused(gated), "approve", shards=1, deadline_s=300)
    assert 1190 < resumed.deadline - time.time() <= 1200


def test_a_run_without_its_own_timeout_gets_the_deployments() -> None:
    resumed = continuation(paused(RunSettings(mode="multi", human_gate=True)), "approve", 1, 300)
    assert 290 < resumed.deadline - time.time() <= 300
