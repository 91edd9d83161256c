"""Tracing: off unless OTEL_* asks (and then nothing is created per step), the context a
step's commands carry when on, trace ids in log lines, metrics counted at the commit."""

from __future__ import annotations

import contextvars
import sys
from collections.abc import Iterator
from types import FrameType

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import Counter

from bus import keys, logs, tracing
from bus.commands import AgentTask, Command, RunState, TraceContext
from bus.runtime import metrics
from bus.runtime.commit import stamped

PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def command(trace: TraceContext) -> Command:
    return Command(
        run_id="r1",
        tenant_id="t1",
        subject="alice",
        role=keys.Role.INTAKE,
        deadline=2e9,
        trace=trace,
        payload=AgentTask(state=RunState(question="q")),
    )


@pytest.fixture
def exporter(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """Tracing on for one test, into memory (no global provider is set)."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(memory))
    monkeypatch.setattr(tracing, "_tracer", provider.get_tracer("test"))
    monkeypatch.setattr(tracing, "ENABLED", True)
    yield memory
    provider.shutdown()


def test_only_the_standard_variables_turn_tracing_on() -> None:
    assert not tracing.wanted({})
    assert not tracing.wanted({"AGENTBUS_REDIS_URL": "redis://x"})
    assert tracing.wanted({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert tracing.wanted({"OTEL_SERVICE_NAME": "agentbus-api"})
    assert not tracing.wanted({"OTEL_SERVICE_NAME": "x", "OTEL_SDK_DISABLED": "true"})
    assert not tracing.wanted({"OTEL_TRACES_EXPORTER": "none"})


def test_off_nothing_is_created_and_commands_keep_their_trace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert not tracing.ENABLED

    def no_span(*_args: object) -> None:
        raise AssertionError("a span was started while tracing is off")

    monkeypatch.setattr(tracing, "_span", no_span)
    with tracing.span("step x", {"a": 1}, parent=TraceContext(traceparent=PARENT)) as s:
        assert s is None
    assert tracing.span("a") is tracing.span("b")  # one shared null context, no allocation
    assert tracing.current() is None and tracing.ids() is None
    first = command(TraceContext(traceparent=PARENT))
    assert first.follow(keys.Role.PLANNER, first.payload).trace == first.trace
    assert logs.add_trace_ids(None, "info", {"event": "x"}) == {"event": "x"}
    # The cost of a span site when off: a bool test and a shared null context, i.e. three
    # Python calls (span, the null context's enter and exit) and nothing else.
    calls: list[str] = []

    def count(frame: FrameType, event: str, _arg: object) -> None:
        if event in ("call", "c_call"):
            calls.append(frame.f_code.co_name if event == "call" else repr(_arg))

    sys.setprofile(count)
    try:
        with tracing.span("step x", parent=first.trace):
            pass
    finally:
        sys.setprofile(None)
    assert calls[:-1] == ["span", "__enter__", "__exit__"], calls  # the last: setprofile


def test_on_a_step_span_continues_the_command_and_the_commit_stamps_what_it_publishes(
    exporter: InMemorySpanExporter,
) -> None:
    first = command(TraceContext(traceparent=PARENT))
    with tracing.span("step intake", parent=first.trace, kind="consumer"):
        with tracing.span("chat scripted", {"gen_ai.request.model": "scripted"}):
            line = logs.add_trace_ids(None, "info", {"event": "x"})
        # stamped where the step's effects are prepared for its commit
        nxt = stamped(first.follow(keys.Role.PLANNER, first.payload))
    chat, step = exporter.get_finished_spans()
    assert step.context is not None and chat.context is not None
    assert format(step.context.trace_id, "032x") == PARENT.split("-")[1]
    assert step.parent is not None and format(step.parent.span_id, "016x") == PARENT.split("-")[2]
    assert chat.parent is not None and chat.parent.span_id == step.context.span_id
    assert line["trace_id"] == PARENT.split("-")[1]
    assert line["span_id"] == format(chat.context.span_id, "016x")
    assert nxt.trace.traceparent == f"00-{PARENT.split('-')[1]}-{step.context.span_id:016x}-01"


def test_a_resume_links_to_the_paused_trace(exporter: InMemorySpanExporter) -> None:
    with tracing.span("gate resume", links=(TraceContext(traceparent=PARENT),)):
        pass
    (resume,) = exporter.get_finished_spans()
    assert resume.context is not None
    assert format(resume.links[0].context.trace_id, "032x") == PARENT.split("-")[1]
    assert format(resume.context.trace_id, "032x") != PARENT.split("-")[1]


def test_a_steps_metrics_count_only_when_it_commits() -> None:
    contextvars.copy_context().run(count_a_step)  # as each step does, in its own task


def count_a_step() -> None:
    counter = Counter("agentbus_test_deferred_total", "test")
    before = counter._value.get()  # pyright: ignore[reportPrivateUsage]
    pending = metrics.open_step()
    metrics.record(counter.inc, 2)
    assert counter._value.get() == before  # pyright: ignore[reportPrivateUsage]
    pending.clear()  # a failed attempt (or a duplicate commit) drops them
    metrics.record(counter.inc, 3)
    metrics.apply(pending)
    assert counter._value.get() == before + 3  # pyright: ignore[reportPrivateUsage]
