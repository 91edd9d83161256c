"""Fold a run's events into what a client shows, honouring ``step_retry`` and
``draft_superseded`` (the answer shown is the current draft only).

A step that is run again first emits ``step_retry``; the tokens that step streamed
before are dropped, so the transcript never shows a retried step's text twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from bus.events import ClientEvent


@dataclass
class Transcript:
    """What a chat client renders for one run."""

    answer_parts: list[tuple[str | None, str]] = field(default_factory=list)
    reasoning_parts: list[tuple[str | None, str]] = field(default_factory=list)
    steps: list[ClientEvent] = field(default_factory=list)
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
    entries: list[dict[str, object]] = []
    for event in kept:
        doc = event.model_dump(exclude={"schema_version", "run_id", "ts"}, exclude_none=True)
        last = entries[-1] if entries else None
        if (
            event.type in ("reasoning", "answer")
            and last is not None
            and (last["type"], last.get("step_id")) == (event.type, event.step_id)
        ):
            last["text"] = f"{last['text']}{event.delta}"  # type: ignore[union-attr]
            continue
        if event.type in ("reasoning", "answer"):
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
