"""Prometheus metrics of a worker process."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, TypeVar

from prometheus_client import Counter, Gauge, Histogram
from prometheus_client.metrics import MetricWrapperBase

MESSAGES = Counter(
    "agentbus_messages_total",
    "Step messages handled, by role and outcome.",
    ["role", "outcome"],
)
STEP_SECONDS = Histogram(
    "agentbus_step_seconds",
    "Wall time of a step, from pick-up to commit.",
    ["role"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
GROUP_LAG = Gauge(
    "agentbus_group_lag",
    "Entries in a role stream not yet delivered to its group.",
    ["stream", "group"],
)
GROUP_PENDING = Gauge(
    "agentbus_group_pending",
    "Entries delivered to a group but not yet acked.",
    ["stream", "group"],
)
FAIR_WAITING = Gauge(
    "agentbus_fair_waiting_runs",
    "Runs waiting for admission on a shard (bus.fairshare): scale the workers on it, the "
    "role streams stay short.",
    ["shard"],
)
DEAD_LETTERS = Counter(
    "agentbus_dead_letters_total",
    "Messages moved to the dead-letter stream, by role and reason.",
    ["role", "reason"],
)
RECLAIMED = Counter(
    "agentbus_reclaimed_total",
    "Pending messages taken over from a consumer that went idle.",
    ["role"],
)
RUNS_FINISHED = Counter(
    "agentbus_runs_finished_total",
    "Runs that ended, by final status and mode (counted by the committing step, once).",
    ["status", "mode"],
)
RUN_SECONDS = Histogram(
    "agentbus_run_seconds",
    "Wall time of a run, from the edge publishing it to the step that ended it.",
    ["mode", "status"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300),
)
FIRST_ANSWER_TOKEN_SECONDS = Histogram(
    "agentbus_run_first_answer_token_seconds",
    "Time from the edge publishing a run to its first answer token.",
    ["mode"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)

Observation = tuple[Callable[[float], None], float]
M = TypeVar("M", bound=MetricWrapperBase)

#: Labelled children already looked up, by metric and label values. ``labels()`` takes a
#: lock and checks its values on every call, and a run's steps ask for the same few
#: children tens of times. Only for metrics whose children are never removed.
_CHILDREN: dict[tuple[MetricWrapperBase, tuple[str, ...]], Any] = {}


def child(metric: M, *values: str) -> M:
    """``metric.labels(*values)``, looked up once per process (children never removed)."""
    key = (metric, values)
    found = _CHILDREN.get(key)
    if found is None:
        if len(_CHILDREN) > 16_384:  # label values that vary without end: start over
            _CHILDREN.clear()
        found = _CHILDREN[key] = metric.labels(*values)
    return found


_STEP: ContextVar[list[Observation] | None] = ContextVar("agentbus_step_metrics", default=None)


def record(apply: Callable[[float], None], value: float = 1.0) -> None:
    """Count ``value`` with ``apply`` (a metric child's ``inc`` or ``observe``) once the
    current step commits; outside a step, now.

    A step whose handler fails, whose commit finds it already done (a redelivery racing
    the original) or whose run was cancelled meanwhile counts nothing, so a redelivered
    step's model calls, tools and run outcome are counted once.
    """
    pending = _STEP.get()
    if pending is None:
        apply(value)
    else:
        pending.append((apply, value))


def open_step() -> list[Observation]:
    """Start collecting the current step's observations (the step's own task)."""
    pending: list[Observation] = []
    _STEP.set(pending)
    return pending


def apply(pending: list[Observation]) -> None:
    """Count a committed step's observations."""
    for fn, value in pending:
        fn(value)
    pending.clear()
