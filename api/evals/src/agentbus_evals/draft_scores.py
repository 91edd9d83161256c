"""What the judges said of each draft of a run, read back from its events (multi mode).

A run's drafts are its ``answer`` events grouped by ``attempt`` (a retried step's partial
text dropped, as a client drops it; so is a draft the answer guard replaced, whose
``draft_superseded`` comes before any judge saw that attempt). A ``critique`` or
``verdict`` judges the newest draft streamed before it. A draft is *flagged* when a judge
asked for changes (REVISE, REPLAN, needs_revision, fail) and *unknown* when a judge's
output could not be read and none flagged it. Scored against the question's expected
answer, that gives the answer eval's catch rate (wrong drafts flagged) and false alarms
(right drafts flagged).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from bus.events import Answer, ClientEvent, Critique, DraftSuperseded, StepRetry, Verdict

FLAGS = frozenset({"REVISE", "REPLAN", "needs_revision", "fail"})
UNKNOWN = frozenset({"UNKNOWN", "unknown"})


@dataclass(frozen=True, slots=True)
class JudgedDraft:
    """One draft a judge reviewed: is it right, and what each judge said (``agent:verdict``)."""

    attempt: int
    correct: bool
    verdicts: tuple[str, ...]
    text: str = ""

    @property
    def flagged(self) -> bool:
        """A judge asked for changes."""
        return any(v.split(":", 1)[1] in FLAGS for v in self.verdicts)

    @property
    def unknown(self) -> bool:
        """A judge's output could not be read, and no judge flagged the draft."""
        return not self.flagged and any(v.split(":", 1)[1] in UNKNOWN for v in self.verdicts)


def judged_drafts(
    events: Iterable[ClientEvent], correct: Callable[[str], bool]
) -> list[JudgedDraft]:
    """The run's judged drafts, in order, each scored with ``correct``."""
    parts: list[tuple[str | None, int, str]] = []
    verdicts: dict[int, list[str]] = {}
    for event in events:
        if isinstance(event, StepRetry):
            parts = [p for p in parts if p[0] != event.step_id]
        elif isinstance(event, Answer):
            parts.append((event.step_id, event.attempt, event.delta))
        elif isinstance(event, DraftSuperseded) and event.attempt not in verdicts:
            # Replaced before any judge reviewed it: the judges read the replacement only.
            parts = [p for p in parts if p[1] != event.attempt]
        elif isinstance(event, Critique | Verdict) and parts:
            attempt = max(a for _, a, _ in parts)
            verdicts.setdefault(attempt, []).append(f"{event.agent}:{event.verdict}")
    out: list[JudgedDraft] = []
    for attempt, said in sorted(verdicts.items()):
        text = "".join(d for _, a, d in parts if a == attempt)
        out.append(JudgedDraft(attempt, correct(text), tuple(said), text[:300]))
    return out
