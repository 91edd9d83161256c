"""Prometheus metrics of the gateway: tool calls by tool and status, and their latency."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

from bus.runtime.metrics import child, record
from gateway.outcome import ToolOutcome

TOOL_CALLS = Counter(
    "agentbus_tool_calls_total",
    "Tool calls through the gateway, by tool, status and code.",
    ["tool", "status", "code"],
)
TOOL_SECONDS = Histogram(
    "agentbus_tool_seconds",
    "Wall time of a tool call through the policy chain, by tool.",
    ["tool"],
    buckets=(0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)


def count_call(tool: str, outcome: ToolOutcome) -> None:
    """Count a call once its step commits (a redelivered step's calls count once)."""
    record(child(TOOL_CALLS, tool, outcome.status.value, outcome.code).inc)
    record(child(TOOL_SECONDS, tool).observe, outcome.duration_ms / 1000)
