"""The answer eval's drafts: what a judge reviewed is the draft a client shows."""

from __future__ import annotations

from agentbus_evals.draft_scores import judged_drafts
from bus.events import Answer, ClientEvent, Critique, DraftSuperseded, StepRetry, Verdict

RUN = "r1"


def _tokens(step: str, attempt: int, *deltas: str) -> list[ClientEvent]:
    return [
        Answer(run_id=RUN, step_id=step, agent="researcher", delta=d, attempt=attempt)
        for d in deltas
    ]


def test_a_draft_the_answer_guard_replaced_is_scored_as_its_replacement() -> None:
    # The researcher streamed a draft, its guard rejected it (draft_superseded within the
    # same attempt) and streamed the replacement: the judges reviewed the replacement only.
    events: list[ClientEvent] = [
        *_tokens("s1", 0, "The total is ", "42 apples."),
        DraftSuperseded(run_id=RUN, step_id="s1", agent="researcher", attempt=0, reason="x"),
        *_tokens("s1", 0, "I couldn't answer this: the calculator tool refused `a + b`."),
        Critique(run_id=RUN, step_id="s2", agent="critic", verdict="OK"),
        Verdict(run_id=RUN, step_id="s3", agent="verifier", verdict="needs_revision"),
    ]
    drafts = judged_drafts(events, lambda text: "42" in text)
    assert [d.text for d in drafts] == [
        "I couldn't answer this: the calculator tool refused `a + b`."
    ]
    assert [d.correct for d in drafts] == [False]
    assert drafts[0].flagged


def test_a_draft_a_judge_sent_back_keeps_its_text_and_the_next_attempt_is_scored_apart() -> None:
    events: list[ClientEvent] = [
        *_tokens("s1", 0, "It is ", "41."),
        Critique(run_id=RUN, step_id="s2", agent="critic", verdict="REVISE", reason="no"),
        DraftSuperseded(run_id=RUN, step_id="s2", agent="critic", attempt=0, reason="no"),
        *_tokens("s3", 1, "It is 42."),
        Critique(run_id=RUN, step_id="s4", agent="critic", verdict="OK"),
    ]
    drafts = judged_drafts(events, lambda text: "42" in text)
    assert [(d.attempt, d.text, d.correct, d.flagged) for d in drafts] == [
        (0, "It is 41.", False, True),
        (1, "It is 42.", True, False),
    ]


def test_a_retried_steps_tokens_are_dropped() -> None:
    events: list[ClientEvent] = [
        *_tokens("s1", 0, "It is 4"),
        StepRetry(run_id=RUN, step_id="s1", delivery=2),
        *_tokens("s1", 0, "It is 42."),
        Critique(run_id=RUN, step_id="s2", agent="critic", verdict="OK"),
    ]
    assert [d.text for d in judged_drafts(events, lambda text: "42" in text)] == ["It is 42."]
