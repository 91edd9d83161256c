"""What a step tells its span and the run metrics: attributes, and how a run ended."""

from __future__ import annotations

import time

from bus import keys, tracing
from bus.commands import Command
from bus.run_state import RunState
from bus.runtime import metrics


def run_state(command: Command) -> RunState | None:
    """The run state a command carries (None for payloads without one)."""
    state = getattr(command.payload, "state", None)
    return state if isinstance(state, RunState) else None


def step_attributes(command: Command, role: keys.Role, delivery: int) -> tracing.Attributes:
    """A step span's attributes: run, tenant, role, agent, step, attempt, delivery count."""
    agent = getattr(command.payload, "agent", None)
    return {
        "agentbus.run_id": command.run_id,
        "agentbus.tenant_id": command.tenant_id,
        "agentbus.role": str(role),
        "agentbus.agent": agent if isinstance(agent, str) else str(role),
        "agentbus.step_id": command.step_id,
        "agentbus.step": command.step,
        "agentbus.attempt": command.attempt,
        "agentbus.branch": command.branch or "",
        "agentbus.payload": command.payload.kind,
        "messaging.system": "redis",
        "messaging.destination.name": keys.role_stream(role, command.shard),
        "messaging.message.delivery_count": delivery,
        "agentbus.redelivered": delivery > 1,
    }


def count_run_end(command: Command, status: str) -> None:
    """Count a run's end (its mode, status and duration) once its last step commits."""
    state = run_state(command)
    mode = state.settings.mode if state is not None else "unknown"
    metrics.record(metrics.child(metrics.RUNS_FINISHED, status, mode).inc)
    if state is not None and state.started_at:
        elapsed = max(0.0, time.time() - state.started_at)
        metrics.record(metrics.child(metrics.RUN_SECONDS, mode, status).observe, elapsed)
        tracing.set_attributes({"agentbus.run.seconds": elapsed})
    tracing.set_attributes({"agentbus.run.status": status, "agentbus.run.mode": mode})
