"""Prometheus metrics of the agents: model calls, tokens, latency, cost, gates.

Counted through `bus.runtime.metrics.record`, so a step's model calls count once, when the
step commits.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from bus import tracing
from bus.run_state import RunState
from bus.runtime.metrics import FIRST_ANSWER_TOKEN_SECONDS, record

_LATENCY = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)

MODEL_CALLS = Counter(
    "agentbus_model_calls_total",
    "Model calls, by model, agent and outcome (ok | error).",
    ["model", "agent", "outcome"],
)
MODEL_TOKENS = Counter(
    "agentbus_model_tokens_total",
    "Tokens the models spent, by model and type (input | output).",
    ["model", "type"],
)
MODEL_SECONDS = Histogram(
    "agentbus_model_seconds", "Wall time of one model call, by model.", ["model"], buckets=_LATENCY
)
MODEL_FIRST_TOKEN_SECONDS = Histogram(
    "agentbus_model_first_token_seconds",
    "Time from a model call to its first streamed token, by model.",
    ["model"],
    buckets=_LATENCY,
)
COST = Counter(
    "agentbus_llm_cost_usd_total",
    "Model cost from AGENTBUS_LLM_PRICES, by tenant and model (US dollars).",
    ["tenant", "model"],
)
BUDGET_CUTS = Counter(
    "agentbus_budget_exhausted_total",
    "Model calls refused or cut because a budget was spent, by budget (run_tokens, ...).",
    ["budget"],
)
BUDGET_TOKENS = Gauge(
    "agentbus_budget_spent_tokens",
    "Tokens a tenant has spent this day or month (period), as its budget counter holds it.",
    ["tenant", "period"],
)
BUDGET_COST = Gauge(
    "agentbus_budget_spent_usd",
    "US dollars a tenant has spent this day or month (period), as its budget counter holds it.",
    ["tenant", "period"],
)
GATE_PAUSES = Counter("agentbus_gate_pauses_total", "Runs paused at a gate, by reason.", ["reason"])
GATE_DECISIONS = Counter(
    "agentbus_gate_decisions_total",
    "Gates resumed, by reason and decision.",
    ["reason", "decision"],
)


def first_answer_token(state: RunState, at: float) -> None:
    """The run's first answer token, ``at`` Unix time (its step's span gets the delay)."""
    if not state.started_at:
        return
    delay = max(0.0, at - state.started_at)
    record(FIRST_ANSWER_TOKEN_SECONDS.labels(state.settings.mode).observe, delay)
    tracing.set_attributes({"agentbus.run.first_answer_token_seconds": delay})


def record_pause(reason: str, state: RunState) -> None:
    """A run paused at a gate (its span gets the event)."""
    record(GATE_PAUSES.labels(reason).inc)
    tracing.add_event(
        "gate_pause", {"agentbus.gate.reason": reason, "agentbus.mode": state.settings.mode}
    )


def record_decision(reason: str, decision: str) -> None:
    """A person decided a gate."""
    GATE_DECISIONS.labels(reason, decision).inc()
