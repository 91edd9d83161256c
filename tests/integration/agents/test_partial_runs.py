"""Every final status keeps its trace and what the run wrote of its answer, marked
partial: an error, a timeout, a cancel and a rejection (issue 27, item 5)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

from agents.errors import LLMBadRequest
from agents.llm.ports import ChatMessage, LLMEvent, LLMOptions, TextDelta, ToolDefinition
from agents.llm.scripted import ScriptedLLM, text, turn
from api.app.run_view import describe
from bus.publish import request_cancel
from tests.held_model import HeldModel
from tests.integration.agents.events import final
from tests.integration.agents.system import StartSystem
from tests.integration.agents.test_gates import ALICE, critic_ok, do_resume, start_run, until
from tests.support import events_of, wait_for

WORDS = "Streams keep every entry until they are trimmed, and groups track what was read. " * 4
#: The word a held answer waits before: the first words are streamed by then.
HELD_AT = 10


class BreaksMidAnswer:
    """A model that writes a few words of its answer, then fails for good (a bad request)."""

    name = "breaks-mid-answer"

    async def stream(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        options: LLMOptions | None = None,
    ) -> AsyncIterator[LLMEvent]:
        for word in ("Streams ", "keep ", "entries"):
            yield TextDelta(text=word)
            await asyncio.sleep(0.05)  # each batch is written before the next word
        raise LLMBadRequest("the model refused the request")

    async def aclose(self) -> None:
        """Nothing to close."""


async def stored(system: Any, run_id: str) -> dict[str, Any]:
    """The run as the REST API and the page get it."""
    return describe(run_id, await system.stores.runs.get(ALICE, run_id)).model_dump(mode="json")


def traced(run: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [e for e in run["trace"] or [] if e["type"] == kind]


async def test_an_error_keeps_the_trace_and_the_partial_answer(start_system: StartSystem) -> None:
    system = await start_system(BreaksMidAnswer())
    events = await system.ask("What do streams keep?")
    run = await stored(system, events[-1].run_id)
    assert run["status"] == "error" and run["answer"] is None and run["partial"] is True
    # What clients were shown of the answer, no more (the last word was still buffered).
    shown = "".join(e.delta for e in events if e.type == "answer")
    assert shown.startswith("Streams keep") and run["partial_answer"] == shown
    [error] = traced(run, "error")
    assert error["code"] == "dead_letter" and "refused the request" in error["message"]
    assert traced(run, "run_started")  # the whole story, from the start


def held_answer() -> HeldModel:
    """The answer, held after its first few words until released (a timeout never is)."""
    return HeldModel(ScriptedLLM([turn(text(WORDS))], token_delay=0.01), at=HELD_AT)


async def streaming_run(system: Any) -> str:
    """The id of the one run, once its answer streams."""
    found: list[str] = []

    async def answering() -> bool:
        found[:] = [k.decode().split(":")[3] for k in await system.redis.keys("ab:*:run:*:events")]
        if len(found) != 1:
            return False
        return any(e.type == "answer" for e in await events_of(system.redis, found[0]))

    await wait_for(answering, within=20)
    return found[0]


async def test_a_timeout_keeps_what_streamed(start_system: StartSystem) -> None:
    system = await start_system(held_answer())
    events = await system.ask("What do streams keep?", deadline_s=2)
    run = await stored(system, events[-1].run_id)
    assert run["status"] == "timeout" and run["partial"] is True
    shown = "".join(e.delta for e in events if e.type == "answer")
    assert shown and WORDS.startswith(shown) and run["partial_answer"] == shown
    [error] = traced(run, "error")
    assert "kept as a partial answer" in error["message"]


async def test_a_cancel_keeps_what_streamed(start_system: StartSystem) -> None:
    system = await start_system(model := held_answer())
    asking = asyncio.create_task(system.ask("What do streams keep?"))
    run_id = await streaming_run(system)
    await request_cancel(system.redis, run_id, system.settings)
    model.release()  # the next batch of the answer sees the cancel
    events = await asking
    run = await stored(system, run_id)
    assert final(events).status == "cancelled" and run["status"] == "cancelled"
    shown = "".join(e.delta for e in events if e.type == "answer")
    assert shown and WORDS.startswith(shown)
    assert run["partial"] is True and run["partial_answer"] == shown


async def test_a_rejected_answer_is_kept_as_a_partial_draft(start_system: StartSystem) -> None:
    system = await start_system(critic_ok())
    command = await start_run(system, "What is 23 × 19?", human_gate=True)
    last, before = await until(system, command.run_id, "approval_request")
    await do_resume(system, command.run_id, "reject")
    await until(system, command.run_id, "done", after=last)
    run = await stored(system, command.run_id)
    draft = "".join(e.delta for e in before if e.type == "answer")
    assert run["status"] == "rejected" and run["answer"] is None
    assert run["partial"] is True and run["partial_answer"] == draft
