"""Fold a run's events into what a client shows, honouring ``step_retry`` and
``draft_superseded`` (the answer shown is the current draft only).

A step that is run again first emits ``step_retry``; the tokens that step streamed
before are dropped, so the transcript never shows a retried step's text twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import cast, get_args

from pydantic import BaseModel
from pydantic_core import from_json

from agentbus_contracts.events import SCHEMA_VERSION
from bus.events import ClientEvent, parse_event


@dataclass
class Transcript:
    """What a chat client renders for one run."""

    answer_parts: list[tuple[str | None, str]] = field(default_factory=list[tuple[str | None, str]])
    reasoning_parts: list[tuple[str | None, str]] = field(
        default_factory=list[tuple[str | None, str]]
    )
    steps: list[ClientEvent] = field(default_factory=list[ClientEvent])
    status: str | None = None
    retries: int = 0

    @property
    def answer(self) -> str:
        """The answer text as shown."""
        return "".join(text for _, text in self.answer_parts)

    @property
    def reasoning(self) -> str:
        """The reasoning text as shown."""
        return "".join(text for _, text in self.reasoning_parts)

    def apply(self, event: ClientEvent) -> None:
        """Apply one event in stream order."""
        match event.type:
            case "answer":
                self.answer_parts.append((event.step_id, event.delta))
            case "reasoning":
                self.reasoning_parts.append((event.step_id, event.delta))
            case "step_retry":
                self.retries += 1
                sid = event.step_id
                self.answer_parts = [p for p in self.answer_parts if p[0] != sid]
                self.reasoning_parts = [p for p in self.reasoning_parts if p[0] != sid]
                self.steps = [s for s in self.steps if s.step_id != sid]
            case "draft_superseded":
                # Every answer token so far belongs to drafts a judge sent back.
                self.answer_parts = []
                self.steps.append(event)
            case "done":
                self.status = event.status
                self.steps.append(event)
            case _:
                self.steps.append(event)


def fold(events: Iterable[ClientEvent]) -> Transcript:
    """The transcript of a sequence of events."""
    transcript = Transcript()
    for event in events:
        transcript.apply(event)
    return transcript


def trace_entries(events: Iterable[ClientEvent]) -> list[dict[str, object]]:
    """The run's ordered trace (reasoning → tool call → result → … → answer) for storage.

    Token deltas of one step and kind are joined into one entry; a retried step's
    earlier output is dropped, as a client would.
    """
    kept: list[ClientEvent] = []
    for event in events:
        if event.type == "step_retry":
            kept = [e for e in kept if e.step_id != event.step_id]
        elif event.type != "done":
            kept.append(event)
    return _joined(_stored(event) for event in kept)


def stream_trace(documents: Iterable[bytes]) -> list[dict[str, object]]:
    """`trace_entries` of a run's stream as it lies in Redis (each event's JSON document).

    A document this build writes (its schema version, exactly its event's fields) is stored
    as read, less what `trace_entries` leaves out: the same entries without building and
    dumping an event model for each (about half the finalizer's cost of its trace). Any
    other document is read through the event models, upcast as `parse_event` does.
    """
    kept: list[dict[str, object]] = []
    for data in documents:
        doc = _stored_document(data)
        if doc["type"] == "step_retry":
            kept = [d for d in kept if d.get("step_id") != doc.get("step_id")]
        elif doc["type"] != "done":
            kept.append(doc)
    return _joined(kept)


#: What a stored trace entry leaves out of its event.
_NOT_STORED = frozenset({"schema_version", "run_id", "ts"})


def _stored(event: ClientEvent) -> dict[str, object]:
    return event.model_dump(exclude=set(_NOT_STORED), exclude_none=True)


def _written_fields(cls: type[BaseModel]) -> tuple[frozenset[str], ...]:
    """The field names an event's JSON holds as ``wire.encode`` writes it: all of them,
    or all but those left out when empty (``exclude_if``)."""
    every = frozenset(name for name, f in cls.model_fields.items() if not f.exclude)
    optional = frozenset(name for name, f in cls.model_fields.items() if f.exclude_if)
    return (every, every - optional) if optional else (every,)


#: Each event type's possible sets of fields in a document this build writes. Its nested
#: models (a citation, a client tool call) have no field that can be None, so the document
#: read as JSON is the model's dump: only top-level None values are left to drop.
_WRITTEN: dict[object, tuple[frozenset[str], ...]] = {
    cls.model_fields["type"].default: _written_fields(cls)
    for cls in get_args(get_args(ClientEvent)[0])
}


def _stored_document(data: bytes) -> dict[str, object]:
    doc: object = from_json(data)
    if type(doc) is dict:
        fields = cast("dict[str, object]", doc)
        version = fields.get("schema_version")
        shapes = _WRITTEN.get(fields.get("type"), ())
        if type(version) is int and version == SCHEMA_VERSION and fields.keys() in shapes:
            for name in _NOT_STORED:
                del fields[name]
            if None in fields.values():
                return {k: v for k, v in fields.items() if v is not None}
            return fields
    return _stored(parse_event(data))


def _joined(docs: Iterable[dict[str, object]]) -> list[dict[str, object]]:
    """Stored event documents with each step's consecutive token deltas joined."""
    entries: list[dict[str, object]] = []
    for doc in docs:
        kind = doc["type"]
        if kind in ("reasoning", "answer"):
            last = entries[-1] if entries else None
            if last is not None and (last["type"], last.get("step_id")) == (
                kind,
                doc.get("step_id"),
            ):
                last["text"] = f"{last['text']}{doc['delta']}"
                continue
            doc["text"] = doc.pop("delta")
        entries.append(doc)
    return entries


def partial_answer(trace: Iterable[Mapping[str, object]] | None) -> str | None:
    """The answer text a stored trace holds (the current draft: text after the last
    ``draft_superseded``), or None if it holds none; what a run that did not end ``done``
    had written of its answer."""
    parts: list[str] = []
    for entry in trace or ():
        if entry.get("type") == "answer":
            parts.append(str(entry.get("text", "")))
        elif entry.get("type") == "draft_superseded":
            parts = []
    return "".join(parts) or None
