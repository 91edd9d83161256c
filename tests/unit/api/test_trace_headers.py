"""The caller's trace context at the edge: taken when well-formed, ignored otherwise."""

from __future__ import annotations

from api.app.run_publish import same_trace
from api.http.trace_headers import caller_trace
from bus.commands import TraceContext

PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
OTHER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def test_a_well_formed_traceparent_is_continued_and_a_bad_one_ignored() -> None:
    assert caller_trace({"traceparent": PARENT, "tracestate": "k=v"}) == TraceContext(
        traceparent=PARENT, tracestate="k=v"
    )
    assert caller_trace({"traceparent": PARENT.upper()}) == TraceContext(traceparent=PARENT)
    assert caller_trace({}) is None
    assert caller_trace({"traceparent": "00-nothex-01"}) is None


def test_the_request_span_is_the_parent_only_when_it_is_in_the_callers_trace() -> None:
    request = TraceContext(traceparent=PARENT.replace("00f067aa0ba902b7", "1111111111111111"))
    assert same_trace(request, TraceContext(traceparent=PARENT))
    assert same_trace(request, None)
    assert not same_trace(request, TraceContext(traceparent=OTHER))  # a frame's own trace
    assert not same_trace(None, TraceContext(traceparent=PARENT))
