"""Drafts a client can tell apart (issue 14, item 7): answer events carry their attempt, a
judge sending the run back marks the draft superseded, and `agentbus ask`'s renderer and
the transcript fold show only the current draft."""

from __future__ import annotations

import io
from collections.abc import Sequence

from rich.console import Console

from agents.llm.ports import ChatMessage, LLMOptions, ToolDefinition
from agents.llm.scripted import ScriptedLLM, text, turn
from api.cli.render import LiveRenderer
from bus.events import Answer, DraftSuperseded
from bus.transcript import fold
from tests.integration.agents.events import final, of_type
from tests.integration.agents.roles.test_multi_mode import role_of
from tests.integration.agents.system import StartSystem

DRAFTS = ["Draft one says 400.", "Draft two says 437."]


def drafting(critic: list[str]) -> ScriptedLLM:
    """The researcher writes DRAFTS in turn; the critic follows its script."""
    drafts, verdicts = iter(DRAFTS), iter(critic)

    def script(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ):
        role = role_of(messages, options)
        if role == "planner":
            return turn(text("- answer"))
        if role == "critic":
            return turn(text(next(verdicts)))
        return turn(text(next(drafts)))

    return ScriptedLLM(script)


async def test_a_draft_sent_back_is_marked_and_replaced(start_system: StartSystem) -> None:
    system = await start_system(drafting(["REVISE 23 × 19 is not 400.", "OK"]))
    events = await system.ask("What is 23 × 19?", mode="multi", verifier_check=False)

    answers = of_type(events, Answer)
    by_attempt = {a: "".join(e.delta for e in answers if e.attempt == a) for a in (0, 1)}
    assert by_attempt == {0: DRAFTS[0], 1: DRAFTS[1]}
    [superseded] = of_type(events, DraftSuperseded)
    assert (superseded.attempt, superseded.agent) == (0, "critic")
    assert "not 400" in superseded.reason
    order = [e.type for e in events if e.type in ("answer", "draft_superseded")]
    assert order.index("draft_superseded") == sum(1 for e in answers if e.attempt == 0)
    assert fold(events).answer == DRAFTS[1] and final(events).answer == DRAFTS[1]

    out = io.StringIO()
    renderer = LiveRenderer(Console(file=out, width=200))
    for event in events:
        renderer.show(event)
    shown = out.getvalue()
    assert DRAFTS[1] in shown and DRAFTS[0] not in shown
    assert "draft 1 sent back" in shown
    # What the judges established, last: an approval nothing checked (no fact-check here,
    # and no measured precision for the scripted critic) is unknown, not a pass.
    assert "verified: unknown (critic OK" in shown


async def test_a_single_mode_answer_streams_as_attempt_zero(start_system: StartSystem) -> None:
    system = await start_system(ScriptedLLM([turn(text("Hello."))]))
    events = await system.ask("Hi")
    assert [e.attempt for e in of_type(events, Answer)] == [0]
    assert of_type(events, DraftSuperseded) == []
