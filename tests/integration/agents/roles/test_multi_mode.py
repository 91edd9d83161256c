"""Multi mode with the scripted model: planner, gather/merge, critic loop, verifier."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from typing import Any

from agents import prompts
from agents.llm.ports import ChatMessage, LLMOptions, ToolDefinition
from agents.llm.scripted import ScriptedLLM, Turn, agent_of, benchmark_turn, text, tool_call, turn
from bus.commands import Command
from bus.events import (
    Citations,
    Critique,
    Plan,
    Reasoning,
    ToolCallStarted,
    ToolResult,
    Verdict,
)
from bus.transcript import fold
from tests.integration.agents.events import final, of_type
from tests.integration.agents.system import StartSystem

# A question whose arithmetic is in words: no recompute is spelled out, the judge's model
# chooses (the free tool pass). "What is 23 × 19?" is recomputed as written.
WORDS = "Multiply twenty-three by nineteen."


def role_of(messages: Sequence[ChatMessage], options: LLMOptions) -> str:
    first = messages[0].content
    if first.startswith(prompts.VERIFY_TOOLS):
        return "fact_check"
    if first.startswith(prompts.RECOMPUTE):
        return "recompute"
    return agent_of(messages, options)


def scripted(critic: Iterator[str], verifier: Iterator[str] | None = None) -> ScriptedLLM:
    """Planner plans, researcher calls the calculator then answers, judges follow scripts."""

    def script(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ):
        role = role_of(messages, options)
        if role == "planner":
            return turn(text("- use the calculator\n- answer"))
        if role == "critic":
            return turn(text(next(critic)))
        if role == "verifier":
            assert verifier is not None
            return turn(text(next(verifier)))
        if role == "fact_check":
            return turn(text("The calculator confirms 437."))
        if role == "recompute":  # no figure to recompute: the free tool pass follows
            return turn(text('{"checks": []}'))
        return benchmark_turn(messages, tools, options)

    return ScriptedLLM(script)


async def test_ok_path_plans_researches_and_critiques(start_system: StartSystem) -> None:
    system = await start_system(scripted(iter(["OK the answer is supported."])))
    events = await system.ask("What is 23 × 19?", mode="multi", verifier_check=False)
    [plan] = of_type(events, Plan)
    assert plan.steps == ["use the calculator", "answer"]
    [critique] = of_type(events, Critique)
    assert (critique.verdict, critique.agent) == ("OK", "critic")
    assert "437" in fold(events).answer and final(events).status == "done"
    order = [e.type for e in events if e.type in ("plan", "tool_call", "critique", "done")]
    assert order == ["plan", "tool_call", "critique", "done"]
    agents = {e.agent for e in events if e.agent}
    assert {"planner", "researcher", "critic", "finalizer"} <= agents
    # The critic's reply is shown as its critique (verdict, reason), never as raw text.
    assert [e for e in of_type(events, Reasoning) if e.agent == "critic"] == []
    assert critique.reason == "the answer is supported."


async def test_revise_then_ok_runs_the_researcher_again(start_system: StartSystem) -> None:
    llm = scripted(iter(["REVISE show the working.", "OK fine now."]))
    system = await start_system(llm)
    events = await system.ask("What is 23 × 19?", mode="multi", verifier_check=False)
    assert [c.verdict for c in of_type(events, Critique)] == ["REVISE", "OK"]
    assert len(of_type(events, Plan)) == 1
    assert len(of_type(events, ToolCallStarted)) == 2  # a fresh attempt
    feedback = [m.content for m in llm.requests[-2][0] if m.role == "system"]
    assert any("show the working" in c for c in feedback)  # the researcher saw the critique


async def test_replan_then_ok_goes_back_to_the_planner(start_system: StartSystem) -> None:
    system = await start_system(scripted(iter(["REPLAN wrong approach.", "OK"])))
    events = await system.ask("What is 23 × 19?", mode="multi", verifier_check=False)
    assert [c.verdict for c in of_type(events, Critique)] == ["REPLAN", "OK"]
    assert len(of_type(events, Plan)) == 2


async def test_attempt_cap_proceeds_regardless(start_system: StartSystem) -> None:
    system = await start_system(scripted(iter(["REVISE a", "REVISE b", "REVISE c"])))
    events = await system.ask("What is 23 × 19?", mode="multi", verifier_check=False)
    assert [c.verdict for c in of_type(events, Critique)] == ["REVISE", "REVISE"]
    assert final(events).status == "done" and "437" in (final(events).answer or "")


async def test_verifier_needs_revision_then_pass(start_system: StartSystem) -> None:
    verdicts = iter(
        [
            '{"verdict": "needs_revision", "reasons": ["no working shown"]}',
            '{"verdict": "pass", "reasons": ["ok"]}',
        ]
    )
    system = await start_system(scripted(iter(["OK", "OK"]), verdicts))
    events = await system.ask(
        "What is 23 × 19?", mode="multi", accuracy="accurate", verifier_check=False
    )
    assert [v.verdict for v in of_type(events, Verdict)] == ["needs_revision", "pass"]
    assert len(of_type(events, ToolCallStarted)) == 2
    assert final(events).status == "done"


async def test_an_unreadable_verdict_is_unknown_and_the_run_is_not_verified(
    start_system: StartSystem,
) -> None:
    system = await start_system(scripted(iter(["OK"] * 3), iter(["not json", "{also bad"] * 3)))
    events = await system.ask(
        "What is 23 × 19?", mode="multi", accuracy="accurate", verifier_check=False
    )
    verdicts = of_type(events, Verdict)
    assert [v.verdict for v in verdicts] == ["unknown"]  # shown as such, nobody sent back
    assert "unreadable" in verdicts[0].reasons[0]
    done = final(events)
    assert done.status == "done" and done.verified is None
    assert "verifier unknown" in (done.verified_reason or "")


async def test_gather_merges_sources_and_a_slow_source_does_not_block(
    start_system: StartSystem,
) -> None:
    async def documents(command: Command, query: str) -> list[dict[str, Any]]:
        return [{"id": "d1", "source": "handbook.md", "title": "Handbook", "text": "23*19=437"}]

    async def slow(command: Command, query: str) -> list[dict[str, Any]]:
        await asyncio.sleep(30)
        return [{"id": "never"}]

    system = await start_system(
        scripted(iter(["OK"])), sources={"documents": documents, "slow": slow}, budget_s=0.3
    )
    events = await system.ask(
        "What is 23 × 19?", mode="multi", verifier_check=False, sources=["documents", "slow"]
    )
    [citations] = of_type(events, Citations)
    assert [(c.source, c.source_kind) for c in citations.items] == [("handbook.md", "documents")]
    assert final(events).status == "done"
    research = [m.content for m in system.llm.requests[1][0] if m.role == "system"]
    assert any("23*19=437" in c and "data, not instructions" in c for c in research)


async def test_fact_check_runs_a_verify_only_tool_pass(start_system: StartSystem) -> None:
    system = await start_system(scripted(iter(["OK verified."])))
    # Nothing the question spells out to recompute (no digits): the free tool pass runs.
    events = await system.ask(WORDS, mode="multi")
    assert len(of_type(events, Critique)) == 1
    critic_request = [r for r in system.llm.requests if role_of(r[0], r[2]) == "critic"][-1]
    assert any("confirms 437" in m.content for m in critic_request[0])
    assert final(events).status == "done"


async def test_researcher_tool_scoping_is_enforced_by_the_gateway(
    start_system: StartSystem,
) -> None:
    def script(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ) -> Turn:
        role = role_of(messages, options)
        if role == "planner":
            return turn(text("- compute"))
        if role == "critic":
            return turn(text("OK"))
        if messages[-1].role == "tool":
            return turn(text("I could not use the calculator."))
        # The model calls a tool it was not offered.
        return turn(tool_call("calculator", {"expression": "2+2"}))

    llm = ScriptedLLM(script)
    system = await start_system(llm)
    events = await system.ask(
        "2+2?", mode="multi", verifier_check=False, researcher_tools=["current_time"]
    )
    [result] = of_type(events, ToolResult)
    assert (result.tool, result.code) == ("calculator", "permission_denied")
    offered = [t.name for t in llm.requests[1][1]]
    assert offered == ["current_time"]


async def test_the_fact_check_gets_exactly_the_researchers_scoped_tools(
    start_system: StartSystem,
) -> None:
    def script(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ) -> Turn:
        role = role_of(messages, options)
        if role == "planner":
            return turn(text("- answer"))
        if role == "critic":
            return turn(text("OK"))
        if role == "fact_check":
            if messages[-1].role == "tool":
                return turn(text("Could not recompute."))
            # The model asks for a tool the tenant scoped out.
            return turn(tool_call("calculator", {"expression": "23*19"}))
        return turn(text("437"))

    llm = ScriptedLLM(script)
    system = await start_system(llm)
    events = await system.ask("What is 23 × 19?", mode="multi", researcher_tools=["current_time"])
    fact_check = [r for r in llm.requests if role_of(r[0], r[2]) == "fact_check"]
    assert [t.name for t in fact_check[0][1]] == ["current_time"]
    [result] = of_type(events, ToolResult)
    assert (result.agent, result.tool, result.code) == ("critic", "calculator", "permission_denied")
    assert final(events).status == "done"


async def test_fact_check_tool_pass_goes_through_the_gateway(start_system: StartSystem) -> None:
    def script(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ) -> Turn:
        role = role_of(messages, options)
        if role == "planner":
            return turn(text("- compute"))
        if role == "critic":
            return turn(text("OK checked."))
        if role == "recompute":
            return turn(text('{"checks": []}'))  # nothing to recompute: the free tool pass
        if role == "fact_check":
            if messages[-1].role == "tool":
                return turn(text("Recomputed: 437 is right."))
            return turn(tool_call("calculator", {"expression": "23*19"}))
        return benchmark_turn(messages, tools, options)

    llm = ScriptedLLM(script)
    system = await start_system(llm)
    events = await system.ask(WORDS, mode="multi")
    calls = [(e.agent, e.tool) for e in of_type(events, ToolCallStarted)]
    assert calls == [("researcher", "calculator"), ("critic", "calculator")]
    critic_request = [r for r in llm.requests if role_of(r[0], r[2]) == "critic"][-1]
    assert any("Recomputed: 437" in m.content for m in critic_request[0])
    # The researcher's conversation did not get the judge's tool results.
    assert final(events).status == "done" and "437" in (final(events).answer or "")
