"""Fold a run's events into what a client shows, honouring ``step_retry``.

A step that is run again first emits ``step_retry``; the tokens that step streamed
before are dropped, so the transcript never shows a retried step's text twice.
"""

from __future__ import annotations

from collections.abc import Iterable
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
