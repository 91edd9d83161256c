"""Prometheus metrics of retrieval: latency and hits per source (counted at the step's commit)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

from bus import tracing
from bus.runtime.metrics import record

RETRIEVAL_SECONDS = Histogram(
    "agentbus_retrieval_seconds",
    "Wall time of one retrieval from a source, by source and status.",
    ["source", "status"],
    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
RETRIEVAL_HITS = Counter(
    "agentbus_retrieval_hits_total", "Items retrieval returned, by source.", ["source"]
)


def observe_search(source: str, status: str, hits: int, seconds: float) -> None:
    """Count one retrieval and describe it on the current span."""
    record(RETRIEVAL_SECONDS.labels(source, status).observe, seconds)
    record(RETRIEVAL_HITS.labels(source).inc, hits)
    tracing.set_attributes({"agentbus.retrieval.status": status, "agentbus.retrieval.hits": hits})
    if status != "ok":
        tracing.set_error(status)
