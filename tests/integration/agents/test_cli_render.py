"""What ``agentbus ask`` prints for real runs: the checked answer and its citations, a
rejected run as rejected, a draft only as a draft."""

from __future__ import annotations

import io

from rich.console import Console

from agents.llm.scripted import ScriptedLLM, text, tool_call, turn
from api.cli.render import LiveRenderer
from bus.events import ClientEvent
from retrieval.stack import Retrieval
from tests.integration.agents.events import final
from tests.integration.agents.roles.test_retrieval_flow import retrieval
from tests.integration.agents.system import StartSystem
from tests.integration.agents.test_gates import critic_ok, do_resume, start_run, until

__all__ = ["retrieval"]  # the fixture: billing.md ingested for tenant t1


def shown(events: list[ClientEvent]) -> str:
    out = io.StringIO()
    renderer = LiveRenderer(Console(file=out, width=200))
    for event in events:
        renderer.show(event)
    return out.getvalue()


async def test_ask_prints_the_checked_answer_and_its_citations(
    start_system: StartSystem, retrieval: Retrieval
) -> None:
    llm = ScriptedLLM(
        [
            turn(tool_call("search_docs", {"query": "when are invoices sent"})),
            turn(text("Invoices go out on the first working day [1]. Also `a[0]` and [7].")),
        ]
    )
    system = await start_system(llm, retrieval=retrieval)
    events = await system.ask("When are invoices sent?")
    out = shown(events)
    answer = "Invoices go out on the first working day [1]. Also `a[0]` and."
    assert final(events).answer == answer and answer in out and "[7]" not in out
    assert "[1] Billing — billing.md" in out  # number, title, source
    assert out.index(answer) < out.index("[1] Billing")


async def test_ask_says_rejected_and_shows_the_rejected_text_only_as_a_draft(
    start_system: StartSystem,
) -> None:
    system = await start_system(critic_ok())
    command = await start_run(system, "What is 23 × 19?", human_gate=True)
    last, before = await until(system, command.run_id, "approval_request")
    await do_resume(system, command.run_id, "reject")
    _, rest = await until(system, command.run_id, "done", after=last)
    out = shown([*before, *rest])
    draft = "".join(e.delta for e in before if e.type == "answer")
    assert draft and "rejected: the answer was not approved" in out
    assert "(draft, not an answer: the run ended rejected)" in out
    assert out.index("(draft, not an answer") < out.index(draft[:30])
