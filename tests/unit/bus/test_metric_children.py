"""Labelled metric children are looked up once and count into the metric itself."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, Counter

from bus.runtime.metrics import child


def test_a_child_is_looked_up_once_and_counts_into_its_metric(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    registry = CollectorRegistry()
    calls = Counter("t_calls_total", "test", ["tool", "status"], registry=registry)
    looked_up: list[tuple[str, ...]] = []
    labels = calls.labels

    def counted(*values: str) -> Counter:
        looked_up.append(values)
        return labels(*values)

    monkeypatch.setattr(calls, "labels", counted)

    first = child(calls, "calculator", "ok")
    first.inc()
    child(calls, "calculator", "ok").inc(2)
    child(calls, "calculator", "error").inc()

    assert child(calls, "calculator", "ok") is first
    assert looked_up == [("calculator", "ok"), ("calculator", "error")]
    ok = {"tool": "calculator", "status": "ok"}
    error = {"tool": "calculator", "status": "error"}
    assert registry.get_sample_value("t_calls_total", ok) == 3
    assert registry.get_sample_value("t_calls_total", error) == 1
