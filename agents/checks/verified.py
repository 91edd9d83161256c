"""What a run's judges established about its answer: ``verified`` yes, no or unknown, and why.

``verified: yes`` is a promise to the reader, so it needs a check that established it:

- the last judge's fact-check recomputed what the question asks for (its own arithmetic, a
  duration it asks for, a question about now) through the gateway's tools, and every
  recomputation of the draft's figures matched (`agents.checks.judge.established`); a
  recomputation only the model planned refutes, but its match establishes nothing (the
  0.5B "recomputed" a sum to confirm a sum given as an average); or
- the last judge approved, and that judge, run by this model, has a measured precision
  (`agents.checks.judge_trust`): on the judges eval's ``test`` half at least 95 % of the drafts it
  approved were right.

A judge that asked for changes the reflection cap left no room for (a recompute that
refuted a figure, a figure the evidence states differently, a grounding finding, or the
model's own REVISE / ``needs_revision``) makes it ``no``. Everything else is ``unknown``
(None): an approval nothing measured, an unreadable verdict, no judge at all.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from agents.checks import judge
from bus.run_state import Review, RunState

APPROVALS = ("OK", "pass")
CANNOT_TELL = ("UNKNOWN", "unknown")
NOT_JUDGED = "not judged: single mode has no judges"


def _never(judge: str) -> bool:
    return False


def last_review(state: RunState) -> Review | None:
    """The last judge's final review: the verifier's in accurate mode, else the critic's."""
    if state.settings.accuracy == "accurate":
        return state.verdicts[-1] if state.verdicts else None
    critic = [r for r in state.critiques if r.agent == "critic"]
    return critic[-1] if critic else None


def conclusion(
    state: RunState, trusted: Callable[[str], bool] = _never, today: dt.date | None = None
) -> tuple[bool | None, str]:
    """What a run's judges established about its answer: (verified, why).

    Args:
        state: the run as the finalizer got it (the last judge's fact-check included).
        trusted: whether a judge (``critic``, ``verifier``), run by this run's model for
            it, has a measured precision that lets its approval alone verify
            (`agents.checks.judge_trust.trusted`); by default none has.
        today: the run's today (a duration asked for "from today"); the system's date
            when not given.

    Returns:
        ``True`` when a recompute matched or a trusted judge approved, ``False`` when the
        last judge asked for changes, ``None`` (unknown) otherwise.
    """
    if state.settings.mode == "single":
        return None, NOT_JUDGED
    review = last_review(state)
    if review is None:
        return None, "no judge reviewed this answer"
    why = f"{review.agent} {review.verdict}" + (f": {review.reason}" if review.reason else "")
    if review.verdict in CANNOT_TELL:
        return None, why
    if review.verdict not in APPROVALS:
        return False, why
    day = today or dt.datetime.now(dt.UTC).date()
    matched = judge.established(state, day)
    if matched:
        return True, f"{why}; recomputed: {'; '.join(matched)}"
    if trusted(review.agent):
        return True, f"{why}; the {review.agent}'s precision is measured for this model"
    return None, (
        f"{why}; not established: {judge.not_established(state, day)}, and the "
        f"{review.agent}'s approval is not measured for this model"
    )
