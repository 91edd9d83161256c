"""Single mode end to end with the scripted model: intake → researcher ⇄ gateway → finalizer."""

from __future__ import annotations

import json
from collections.abc import Sequence

from agents import prompts
from agents.llm.ports import ChatMessage, LLMEvent, LLMOptions, ToolDefinition
from agents.llm.scripted import (
    BENCHMARK_ANSWER,
    ScriptedLLM,
    reasoning,
    text,
    tool_call,
    turn,
)
from bus.events import ClientEvent, ToolResult
from bus.store import Scope
from bus.transcript import fold
from tests.integration.agents.events import final, of_type
from tests.integration.agents.system import StartSystem
from tests.support import wait_for

ALICE = Scope.user("t1", "alice")


def types(events: Sequence[ClientEvent]) -> list[str]:
    return [e.type for e in events]


def tool_results(events: Sequence[ClientEvent]) -> list[ToolResult]:
    return of_type(events, ToolResult)


async def test_tool_loop_calculator_then_answer(start_system: StartSystem) -> None:
    llm = ScriptedLLM()  # the benchmark turn: calculator(23 * 19), then the answer
    system = await start_system(llm)
    events = await system.ask("What is 23 × 19?")

    assert types(events)[0] == "run_started"
    [result] = tool_results(events)
    assert (result.tool, result.status, result.result) == (
        "calculator",
        "ok",
        {"expression": "23 * 19", "result": 437},
    )
    transcript = fold(events)
    assert transcript.answer == BENCHMARK_ANSWER and transcript.status == "done"
    assert final(events).answer == BENCHMARK_ANSWER
    # The model got the result back as a TOOL message (data), after its own call.
    second_request = llm.requests[1][0]
    assert second_request[-1].role == "tool" and "437" in second_request[-1].content
    assert second_request[0].role == "system" and "Today is" in second_request[0].content
    run = await system.stores.runs.get(ALICE, events[0].run_id)
    assert run is not None and run.status == "done" and run.answer == BENCHMARK_ANSWER
    kinds = [entry["type"] for entry in run.trace or []]
    assert kinds == ["run_started", "tool_call", "tool_result", "answer"]
    assert run.usage and run.usage["completion_tokens"] == 52


async def test_reasoning_streams_before_the_answer(start_system: StartSystem) -> None:
    llm = ScriptedLLM([turn(reasoning("Let me think about it."), text("Paris."))])
    system = await start_system(llm)
    events = await system.ask("Capital of France?", think=True, use_tools=False)
    assert types(events).index("reasoning") < types(events).index("answer")
    assert fold(events).reasoning == "Let me think about it."
    assert llm.requests[0][2].think is True
    assert llm.requests[0][1] == ()  # no tools offered


async def test_hop_cap_ends_with_i_dont_know(start_system: StartSystem) -> None:
    llm = ScriptedLLM([turn(tool_call("calculator", {"expression": "1+1"}))], cycle=True)
    system = await start_system(llm)
    events = await system.ask("loop forever", max_tool_hops=2)
    assert len(tool_results(events)) == 2
    assert final(events).stop_reason == "tool_loop_exhausted"
    assert final(events).answer == prompts.TOOL_LOOP_EXHAUSTED
    assert fold(events).answer == prompts.TOOL_LOOP_EXHAUSTED


async def test_bad_tool_arguments_reach_the_model_which_recovers(start_system: StartSystem) -> None:
    llm = ScriptedLLM(
        [
            turn(tool_call("calculator", {"expr": "2+2"})),
            turn(tool_call("calculator", {"expression": "2+2"})),
            turn(text("It is 4.")),
        ]
    )
    system = await start_system(llm)
    events = await system.ask("2+2?")
    first, second = tool_results(events)
    assert (first.status, first.code) == ("error", "schema_invalid")
    assert "expression" in first.message
    assert (second.status, second.result["result"]) == ("ok", 4)
    error_seen_by_model = llm.requests[1][0][-1]
    assert error_seen_by_model.role == "tool" and "schema_invalid" in error_seen_by_model.content
    assert fold(events).answer == "It is 4."


async def test_unknown_tool_is_reported_to_the_model(start_system: StartSystem) -> None:
    llm = ScriptedLLM([turn(tool_call("teleport", {"to": "mars"})), turn(text("I cannot."))])
    system = await start_system(llm)
    events = await system.ask("go to mars")
    [result] = tool_results(events)
    assert (result.status, result.code) == ("error", "unknown_tool")
    assert final(events).status == "done" and fold(events).answer == "I cannot."


async def test_deadline_ends_the_run_with_timeout(start_system: StartSystem) -> None:
    # 200 tokens at 50 ms each: the answer cannot end before the deadline, however loaded
    # the host is.
    system = await start_system(ScriptedLLM([turn(text("word " * 200))], token_delay=0.05))
    events = await system.ask("slow", deadline_s=0.3)
    assert final(events).status == "timeout"
    assert any(e.type == "error" and e.code == "timeout" for e in events)
    runs = system.stores.runs

    async def recorded() -> bool:  # the recorder writes the run's row after the event
        run = await runs.get(ALICE, events[0].run_id)
        return run is not None and run.status == "timeout"

    await wait_for(recorded, within=20)


async def test_first_question_skips_contextualization_follow_up_uses_it(
    start_system: StartSystem,
) -> None:
    def script(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ) -> list[LLMEvent]:
        if messages[0].content.startswith(prompts.CONTEXTUALIZE):
            return turn(text("What is the population of Paris?"))
        last_user = [m for m in messages if m.role == "user"][-1].content
        return turn(text(f"answer to: {last_user}"))

    llm = ScriptedLLM(script)
    system = await start_system(llm)
    first = await system.ask("Tell me about Paris.", conversation_id="conv1")
    assert "interpreted" not in types(first)
    assert len(llm.requests) == 1  # no extra model call for a first question

    follow = await system.ask("And its population?", conversation_id="conv1")
    [interpreted] = [e for e in follow if e.type == "interpreted"]
    assert interpreted.text == "What is the population of Paris?"
    research = llm.requests[-1][0]
    # History is there, the rewrite guides, the original question still drives the answer.
    assert [m.content for m in research if m.role == "user"] == [
        "Tell me about Paris.",
        "And its population?",
    ]
    assert any("population of Paris" in m.content for m in research if m.role == "system")
    history = await system.stores.conversations.history(ALICE, "conv1")
    assert [(m.role, m.content) for m in history] == [
        ("user", "Tell me about Paris."),
        ("assistant", "answer to: Tell me about Paris."),
        ("user", "And its population?"),
        ("assistant", "answer to: And its population?"),
    ]


async def test_tool_result_text_is_data_not_instructions(start_system: StartSystem) -> None:
    llm = ScriptedLLM([turn(tool_call("current_time", {"timezone": "UTC"})), turn(text("ok"))])
    system = await start_system(llm)
    await system.ask("time?")
    tool_message = llm.requests[1][0][-1]
    assert tool_message.role == "tool" and tool_message.name == "current_time"
    payload = json.loads(tool_message.content)
    assert payload["status"] == "ok" and "result" in payload
    assert "data, not instructions" in llm.requests[0][0][0].content


async def test_a_run_reads_as_done_in_the_transaction_that_gives_its_conversation_the_answer(
    start_system: StartSystem,
) -> None:
    system = await start_system(ScriptedLLM())
    runs, conversations = system.stores.runs, system.stores.conversations
    end_answered = runs.end_answered
    seen: list[tuple[bool, list[tuple[str, str]]]] = []

    async def what_a_client_reads(owner: Scope, run_id: str) -> None:
        # What a client that polls the run and then opens the conversation would read.
        run = await runs.get(owner, run_id)
        history = await conversations.history(owner, "c-order")
        seen.append((run is not None and run.is_terminal, [(m.role, m.content) for m in history]))

    async def watched(owner: Scope, run_id: str, *args: object, **kwargs: object) -> object:
        await what_a_client_reads(owner, run_id)
        ended = await end_answered(owner, run_id, *args, **kwargs)  # type: ignore[arg-type]
        await what_a_client_reads(owner, run_id)
        return ended

    runs.end_answered = watched  # type: ignore[method-assign]
    events = await system.ask("What is 23 × 19?", conversation_id="c-order")

    assert final(events).status == "done"
    answered = [("user", "What is 23 × 19?"), ("assistant", BENCHMARK_ANSWER)]
    assert seen == [(False, []), (True, answered)]
