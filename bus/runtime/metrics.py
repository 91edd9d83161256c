"""Prometheus metrics of a worker process."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

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
