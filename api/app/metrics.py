"""Prometheus metrics of the API process (served at ``/metrics``)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

REQUESTS = Counter(
    "agentbus_api_requests_total",
    "HTTP requests, by route template, method and status code.",
    ["route", "method", "status"],
)
REQUEST_SECONDS = Histogram(
    "agentbus_api_request_seconds",
    "HTTP request duration (streaming responses: until the headers).",
    ["route"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
)
RUNS_STARTED = Counter(
    "agentbus_api_runs_started_total", "Runs published, by entry point.", ["via"]
)
RUNS_BY_MODE = Counter(
    "agentbus_runs_started_total",
    "Runs published (a retry of the same run not again), by mode.",
    ["mode"],
)
REJECTED = Counter("agentbus_api_rejected_total", "Requests refused, by error code.", ["code"])
WS_CONNECTIONS = Gauge("agentbus_ws_connections", "Open websocket connections.")
WS_CLOSED = Counter(
    "agentbus_ws_closed_total", "Websocket connections closed by the server, by reason.", ["reason"]
)
SSE_STREAMS = Gauge("agentbus_sse_streams", "Open server-sent event streams.")
RELAY_STREAMS = Gauge("agentbus_relay_streams", "Run event streams the relay reads.")
RELAY_SUBSCRIPTIONS = Gauge("agentbus_relay_subscriptions", "Client subscriptions to run streams.")
RELAY_EVENTS = Counter("agentbus_relay_events_total", "Events the relay read from Redis.")
RELAY_FANOUT = Counter(
    "agentbus_relay_deliveries_total", "Events handed to client subscriptions (the fan-out)."
)
RELAY_WAKES = Counter(
    "agentbus_relay_wakes_total", "Times the shared XREAD was re-issued for new streams."
)
# Per stage of an event's way to a client, each from its XADD (the entry id's clock):
# the next regression names its stage (``agentbus bench relay`` reads these).
_STAGE_BUCKETS = (0.0005, 0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 1.0)
RELAY_READ_DELAY = Histogram(
    "agentbus_relay_read_delay_seconds",
    "From an event's XADD to the relay reading it.",
    buckets=_STAGE_BUCKETS,
)
WS_SEND_DELAY = Histogram(
    "agentbus_ws_send_delay_seconds",
    "From an event's XADD to its websocket frame written to the socket.",
    buckets=_STAGE_BUCKETS,
)
GC_PAUSE = Histogram(
    "agentbus_gc_pause_seconds",
    "Garbage-collector pauses of the API process, by generation (the event loop stops).",
    ["generation"],
    buckets=_STAGE_BUCKETS,
)
ADMISSIONS = Counter(
    "agentbus_admissions_total",
    "Externally published questions handled, by outcome.",
    ["outcome"],
)
