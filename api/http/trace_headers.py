"""The caller's W3C trace context from request headers (``traceparent``, ``tracestate``)."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import ValidationError

from agentbus_contracts.questions import TraceContext


def caller_trace(headers: Mapping[str, str]) -> TraceContext | None:
    """The trace a request continues; None without one or when it is malformed (ignored,
    as the W3C spec asks: a bad header starts a new trace rather than failing the call)."""
    parent = headers.get("traceparent")
    if not parent:
        return None
    try:
        return TraceContext(
            traceparent=parent.strip().lower(), tracestate=headers.get("tracestate")
        )
    except ValidationError:
        return None
