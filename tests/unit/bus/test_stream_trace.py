"""A run's trace read from its stream's JSON documents is the trace its event models give."""

from __future__ import annotations

import json
from typing import Any, get_args

import pytest
from pydantic import BaseModel

from bus import transcript, wire
from bus.events import (
    Answer,
    ApprovalRequest,
    Citation,
    Citations,
    ClientEvent,
    ClientToolCall,
    Critique,
    Done,
    DraftSuperseded,
    ErrorEvent,
    Interpreted,
    Plan,
    Reasoning,
    RunStarted,
    StepRetry,
    ToolCallStarted,
    ToolResult,
    Verdict,
    parse_event,
)
from bus.transcript import stream_trace, trace_entries

RUN = "r1"


def _no_model(data: bytes) -> ClientEvent:
    raise AssertionError(f"read through the event models: {data[:80]!r}")


def _every_kind() -> list[ClientEvent]:
    """One or more events of every type, with None fields, nested models and a retry."""
    return [
        RunStarted(run_id=RUN, step_id="s0", agent="intake", question="q?", mode="multi"),
        Interpreted(run_id=RUN, step_id="s0", text="the question, standalone"),
        Plan(run_id=RUN, step_id="s1", agent="planner", steps=["one", "two"]),
        Reasoning(run_id=RUN, step_id="s2", delta="think "),
        Reasoning(run_id=RUN, step_id="s2", delta="more"),
        ToolCallStarted(run_id=RUN, step_id="s2", call_id="c1", tool="calc", args={"x": None}),
        ToolResult(
            run_id=RUN,
            step_id="s2",
            call_id="c1",
            tool="calc",
            status="ok",
            code="ok",
            result={"value": 437, "unit": None},
            duration_ms=1.5,
        ),
        Answer(run_id=RUN, step_id="s3", agent="researcher", delta="dropped"),
        StepRetry(run_id=RUN, step_id="s3", agent="researcher", delivery=2),
        Answer(run_id=RUN, step_id="s3", agent="researcher", delta="The answer "),
        Answer(run_id=RUN, step_id="s3", agent="researcher", delta="is 437 [1]."),
        Citations(
            run_id=RUN,
            step_id="s3",
            items=[Citation(ref=1, source="doc.md", title="Doc", snippet="437")],
            stripped=1,
        ),
        Critique(run_id=RUN, step_id="s4", agent="critic", verdict="REVISE", reason="why"),
        DraftSuperseded(run_id=RUN, step_id="s4", attempt=1, reason="revise"),
        Verdict(run_id=RUN, step_id="s5", agent="verifier", verdict="pass", reasons=["ok"]),
        ApprovalRequest(run_id=RUN, step_id="s6", reason="approve_answer", answer="a"),
        ApprovalRequest(
            run_id=RUN,
            step_id="s6",
            reason="client_tool",
            calls=[ClientToolCall(id="t1", name="lookup", arguments={"k": None})],
        ),
        ErrorEvent(run_id=RUN, step_id="s7", code="tool_failed", message="it failed"),
        Done(run_id=RUN, step_id="s8", status="done", answer="The answer is 437 [1]."),
    ]


def test_the_trace_of_the_stream_is_the_trace_of_its_events(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    events = _every_kind()
    documents = [wire.encode(e).encode() for e in events]

    with monkeypatch.context() as patched:  # every document this build writes: no model
        patched.setattr(transcript, "parse_event", _no_model)
        from_documents = stream_trace(documents)

    assert from_documents == trace_entries(parse_event(d) for d in documents)
    assert json.dumps(from_documents) == json.dumps(trace_entries(events))
    kinds = [entry["type"] for entry in from_documents]
    assert "step_retry" not in kinds and "done" not in kinds
    answers = [entry["text"] for entry in from_documents if entry["type"] == "answer"]
    assert answers == ["The answer is 437 [1]."]


def test_a_document_this_build_does_not_write_is_read_through_the_models() -> None:
    written = json.loads(wire.encode(Answer(run_id=RUN, step_id="s1", delta="hi")))
    newer = {**written, "confidence": 0.9}  # a field a newer release added
    no_version = {k: v for k, v in written.items() if k != "schema_version"}
    documents = [json.dumps(doc).encode() for doc in (newer, no_version)]

    entries = stream_trace(documents)

    assert entries == trace_entries(parse_event(d) for d in documents)
    assert entries == [{"step_id": "s1", "type": "answer", "attempt": 0, "text": "hihi"}]


def _nested_models(annotation: object) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _nested_models(arg)]


def test_no_model_inside_an_event_has_a_field_that_can_be_none() -> None:
    # What lets a document be stored as read: a model's dump drops None fields of the
    # models nested in it, and JSON read as it is would keep them.
    for event in get_args(get_args(ClientEvent)[0]):
        for field in event.model_fields.values():
            for nested in _nested_models(field.annotation):
                for name, inner in nested.model_fields.items():
                    can_be_none = type(None) in get_args(inner.annotation) or inner.annotation in (
                        Any,
                        object,
                        None,
                    )
                    assert not can_be_none, f"{event.__name__}: {nested.__name__}.{name}"
