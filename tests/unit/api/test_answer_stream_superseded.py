"""A streamed single-mode completion says so in ``content`` when the researcher
supersedes a draft that was not an answer (text sent as content cannot be taken back)."""

from __future__ import annotations

from api.http.openai_dialect import AnswerStream
from bus.events import Answer, ClientEvent, DraftSuperseded, RunStarted


def content(stream: AnswerStream, *events: ClientEvent) -> str:
    sent = [d for e in events for d in stream.deltas(e)]
    return "".join(d.get("content", "") for d in sent)


def test_a_superseded_single_mode_draft_is_marked_before_the_answer_that_replaces_it() -> None:
    stream = AnswerStream()
    said = content(
        stream,
        RunStarted(run_id="r", question="q", mode="single"),
        Answer(run_id="r", step_id="s2", agent="researcher", delta="Invalid argument"),
        DraftSuperseded(
            run_id="r",
            step_id="s2",
            agent="researcher",
            attempt=0,
            reason="the draft repeated a tool's error",
        ),
        Answer(run_id="r", step_id="s2", agent="researcher", delta="I couldn't answer this."),
    )
    assert said == (
        "Invalid argument\n\n(the draft repeated a tool's error: the text above is not the "
        "answer)\n\nI couldn't answer this."
    )
