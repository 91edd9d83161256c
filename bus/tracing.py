"""OpenTelemetry traces of runs: one trace per run across every process that touches it.

Off unless the process environment sets one of the standard ``OTEL_*`` variables
(:data:`WANTED`) and the ``otel`` extra is installed. While off, every function here returns
at its first line, and no span object, context or attribute dict is created on a step's
path (:data:`ENABLED` is a module constant read once per call).

The trace context travels in :attr:`bus.commands.Command.trace` (W3C ``traceparent``): the
edge starts a run's trace or continues the caller's, each step's span is a child of the
span of the step that published it, and `Command.follow` stamps the current step's context
on the commands a step publishes. Model calls, tool calls, retrievals, store writes and gate
pauses are children of their step's span.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING, Any

import structlog

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

    from bus.commands import TraceContext

#: Any of these set (and ``OTEL_SDK_DISABLED`` not ``true``) turns tracing on.
WANTED = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_TRACES_EXPORTER",
    "OTEL_SERVICE_NAME",
    "OTEL_TRACES_SAMPLER",
)

ENABLED = False
_tracer: Tracer | None = None
log = structlog.get_logger("bus.tracing")

Attributes = Mapping[str, str | int | float | bool]


def wanted(env: Mapping[str, str] = os.environ) -> bool:
    """Whether the environment asks for traces."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if env.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return False
    return any(env.get(name) for name in WANTED)


def configure(service: str = "agentbus") -> bool:
    """Turn tracing on when the environment asks for it (once per process).

    The SDK reads ``OTEL_EXPORTER_OTLP_*`` (endpoint, headers, timeout), the sampler
    (``OTEL_TRACES_SAMPLER``/``_ARG``) and ``OTEL_RESOURCE_ATTRIBUTES`` itself;
    ``OTEL_SERVICE_NAME`` defaults to ``service``. Spans leave in batches over OTLP/HTTP
    (``OTEL_TRACES_EXPORTER=console`` prints them instead) and are flushed at exit.
    """
    global ENABLED, _tracer
    if ENABLED or not wanted():
        return ENABLED
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
            ConsoleSpanExporter,
            SpanExporter,
        )
    except ImportError:
        log.warning("OTEL_* is set but the otel extra is not installed: no traces")
        return False
    attrs = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": service}
    provider = TracerProvider(resource=Resource.create(attrs))
    exporter: SpanExporter
    if os.environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() == "console":
        exporter = ConsoleSpanExporter()
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    _tracer = provider.get_tracer("agentbus")
    ENABLED = True  # pyright: ignore[reportConstantRedefinition] (read on every step)
    return True


def shutdown() -> None:
    """Flush the spans not yet exported (a process's last act; also run at exit)."""
    if not ENABLED:
        return
    from opentelemetry import trace

    provider: Any = trace.get_tracer_provider()
    with contextlib.suppress(Exception):
        provider.force_flush(5_000)


def _parent(trace_context: TraceContext | None) -> Any:
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    if trace_context is None or not trace_context.traceparent:
        return None
    carrier = {"traceparent": trace_context.traceparent}
    if trace_context.tracestate:
        carrier["tracestate"] = trace_context.tracestate
    return TraceContextTextMapPropagator().extract(carrier)


def current() -> TraceContext | None:
    """The current span's context as a `TraceContext` (None when off or outside a span)."""
    if not ENABLED:
        return None
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    from bus.commands import TraceContext

    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier)
    if "traceparent" not in carrier:
        return None
    return TraceContext(traceparent=carrier["traceparent"], tracestate=carrier.get("tracestate"))


def ids() -> tuple[str, str] | None:
    """The current trace and span ids in hex, for log lines (None when off or no span)."""
    if not ENABLED:
        return None
    from opentelemetry import trace

    ctx = trace.get_current_span().get_span_context()
    if not ctx.is_valid:
        return None
    return format(ctx.trace_id, "032x"), format(ctx.span_id, "016x")


#: The one null context every span site returns while tracing is off.
OFF: contextlib.AbstractContextManager[None] = contextlib.nullcontext()


def span(
    name: str,
    attributes: Attributes | None = None,
    *,
    parent: TraceContext | None = None,
    links: tuple[TraceContext, ...] = (),
    kind: str = "internal",
) -> contextlib.AbstractContextManager[Span | None]:
    """A span, current inside the block (None, and nothing created, when tracing is off).

    Args:
        name: what it does, e.g. ``step researcher``.
        attributes: set on start.
        parent: a remote parent (a command's trace); by default the current span.
        links: earlier traces this one continues (a resumed gate's).
        kind: ``internal``, ``server``, ``client``, ``producer`` or ``consumer``.
    """
    if not ENABLED or _tracer is None:
        return OFF
    return _span(_tracer, name, attributes, parent, links, kind)


@contextlib.contextmanager
def _span(
    tracer: Tracer,
    name: str,
    attributes: Attributes | None,
    parent: TraceContext | None,
    links: tuple[TraceContext, ...],
    kind: str,
) -> Generator[Span]:
    from opentelemetry import trace
    from opentelemetry.trace import Link, SpanKind, Status, StatusCode

    link_list: list[Link] = []
    for earlier in links:
        ctx = _parent(earlier)
        if ctx is not None:
            link_list.append(Link(trace.get_current_span(ctx).get_span_context()))
    with tracer.start_as_current_span(
        name,
        context=_parent(parent) if parent is not None else None,
        kind=SpanKind[kind.upper()],
        attributes=dict(attributes or {}),
        links=link_list,
        record_exception=True,
        set_status_on_exception=True,
    ) as current_span:
        try:
            yield current_span
        except BaseException as e:
            current_span.set_status(Status(StatusCode.ERROR, repr(e)))
            raise


def set_attributes(attributes: Attributes) -> None:
    """Add attributes to the current span (nothing when off)."""
    if not ENABLED:
        return
    from opentelemetry import trace

    trace.get_current_span().set_attributes(dict(attributes))


def add_event(name: str, attributes: Attributes | None = None) -> None:
    """An event on the current span (nothing when off)."""
    if not ENABLED:
        return
    from opentelemetry import trace

    trace.get_current_span().add_event(name, dict(attributes or {}))


def set_error(message: str) -> None:
    """Mark the current span failed (nothing when off)."""
    if not ENABLED:
        return
    from opentelemetry import trace
    from opentelemetry.trace import Status, StatusCode

    trace.get_current_span().set_status(Status(StatusCode.ERROR, message))


def store_span(operation: str) -> contextlib.AbstractContextManager[Span | None]:
    """A span around a write to the SQL store, e.g. ``runs.end`` (nothing when off)."""
    if not ENABLED:
        return OFF
    return span(f"store {operation}", {"db.operation.name": operation}, kind="client")
