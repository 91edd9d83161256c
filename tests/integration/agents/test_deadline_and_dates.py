"""The run's deadline cuts a step under way; every agent is told today's date; the
fact-check's tool pass fails open (issue 14, items 5, 6 and 9)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime

from pydantic import SecretStr

from agents.errors import LLMUnavailable
from agents.llm.openai_compat import OpenAICompatConfig, OpenAICompatLLM
from agents.llm.ports import ChatMessage, LLMOptions, ToolDefinition
from agents.llm.scripted import ScriptedLLM, benchmark_turn, text, turn
from bus.commands import new_run_id
from bus.events import Critique, ErrorEvent
from tests.integration.agents.events import final, of_type
from tests.integration.agents.roles.test_multi_mode import role_of, scripted
from tests.integration.agents.system import StartSystem
from tests.integration.llm.fake_openai_server import FakeOpenAIServer, Stall


async def test_a_model_call_that_hangs_is_cut_at_the_deadline(start_system: StartSystem) -> None:
    server = FakeOpenAIServer().start()
    server.plan = [Stall(seconds=60, before=3)]  # a few tokens, then silence
    llm = OpenAICompatLLM(
        OpenAICompatConfig(
            base_url=server.base_url, api_key=SecretStr("test-key"), model="fake-model"
        )
    )
    try:
        system = await start_system(llm)
        started = time.monotonic()
        events = await system.ask("Hello there", deadline_s=2)
        took = time.monotonic() - started
    finally:
        await llm.aclose()
        server.stop()
    [error] = of_type(events, ErrorEvent)
    assert error.code == "timeout" and "kept as a partial answer" in error.message
    assert events[-1].type == "done" and final(events).status == "timeout"
    assert final(events).answer is None
    assert took < 8  # not the adapter's 120 s read timeout


async def test_every_agent_is_told_todays_date(start_system: StartSystem) -> None:
    llm = scripted(iter(["OK", "OK"]), iter(['{"verdict": "pass", "reasons": []}'] * 2))
    system = await start_system(llm)
    conversation = new_run_id()
    await system.ask(
        "What is 23 × 19?", conversation_id=conversation, mode="multi", accuracy="accurate"
    )
    await system.ask("And doubled?", conversation_id=conversation, mode="multi")
    today = datetime.now(UTC).strftime("%A %d %B %Y")
    seen: set[str] = set()
    for messages, _, options in llm.requests:
        role = role_of(messages, options)
        if messages[0].content.startswith("Rewrite the user's last message"):
            role = "contextualize"
        seen.add(role)
        assert f"Today is {today}." in messages[0].content, role
    # The draft states a figure (437), so the fact-check is a recompute.
    assert {"planner", "researcher", "critic", "verifier", "recompute", "contextualize"} <= seen


async def test_a_failing_fact_check_model_leaves_the_run_done_and_says_so(
    start_system: StartSystem,
) -> None:
    def script(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ):
        role = role_of(messages, options)
        if role in ("fact_check", "recompute"):
            raise LLMUnavailable("the model endpoint is down")
        if role == "planner":
            return turn(text("- use the calculator"))
        if role == "critic":
            return turn(text("OK fine."))
        return benchmark_turn(messages, tools, options)

    system = await start_system(ScriptedLLM(script))
    events = await system.ask("What is 23 × 19?", mode="multi")
    [critique] = of_type(events, Critique)
    assert "fact-check's recompute failed (llm_unavailable)" in critique.reason
    assert final(events).status == "done" and "437" in (final(events).answer or "")
