"""The fact-check's progress (`agents.checks.judge.advance`), step by step, without a broker."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from agents import prompts
from agents.checks.judge import VERIFIER_TOOL_HOPS, advance, arrived, runs_fact_check
from agents.deps import AgentDeps
from agents.llm.ports import ToolDefinition
from agents.llm.scripted import ScriptedLLM, Turn, text, tool_call, turn
from bus import keys
from bus.commands import (
    AgentTask,
    Command,
    GatherTask,
    ToolCallBatch,
    ToolCallResult,
    ToolResults,
    deadline_in,
)
from bus.run_state import ChatMessage, EvidenceItem, JudgeProgress, RunSettings, RunState
from bus.runtime.context import StepResult
from bus.store import ConversationStore, RunStore, make_engine

TOOLS = [ToolDefinition(name="calculator"), ToolDefinition(name="current_time")]


@pytest.fixture
async def deps_for() -> AsyncIterator[Any]:
    engine = make_engine("sqlite+aiosqlite:///:memory:")  # the judge never touches the store

    def make(script: Sequence[Turn] = ()) -> AgentDeps:
        return AgentDeps(
            llm=ScriptedLLM(list(script)),
            tools=TOOLS,
            runs=RunStore(engine),
            conversations=ConversationStore(engine),
        )

    yield make
    await engine.dispose()


def state(
    judge: JudgeProgress | None = None, draft: str = "Four hundred thirty-seven.", **settings: Any
) -> RunState:
    # A draft without digits: the free tool pass (a figure would make it a recompute).
    values = {"mode": "multi", **settings}
    return RunState(
        question="What is 23 × 19?",
        draft=draft,
        settings=RunSettings.model_validate(values),
        judge=judge or JudgeProgress(),
    )


def command(payload: Any, step: int = 5) -> Command:
    return Command(
        run_id="run-1",
        tenant_id="t1",
        subject="alice",
        role=keys.Role.CRITIC,
        step=step,
        deadline=deadline_in(60),
        payload=payload,
    )


async def test_with_sources_the_fact_check_first_re_queries_them(deps_for: Any) -> None:
    s = state(sources=["documents", "web"])
    moved = await advance("critic", command(AgentTask(state=s)), s, deps_for())
    assert isinstance(moved, StepResult)
    branches = list(moved.next)
    assert [b.role for b in branches] == [keys.Role.RETRIEVAL] * 2
    assert [b.branch for b in branches] == ["documents", "web"]
    task = branches[0].payload
    assert isinstance(task, GatherTask)
    assert (task.purpose, task.join, task.expected) == ("recheck", "recheck-6", 2)
    assert task.state.judge.phase == "recheck"


async def test_after_the_recheck_the_tool_pass_asks_the_gateway(deps_for: Any) -> None:
    deps = deps_for([turn(tool_call("calculator", {"expression": "23*19"}, id="call_1"))])
    s = state(
        JudgeProgress(phase="recheck"), sources=["documents"], researcher_tools=["calculator"]
    )
    moved = await advance("critic", command(AgentTask(state=s)), s, deps)
    assert isinstance(moved, StepResult)
    [sent] = moved.next
    batch = sent.payload
    assert sent.role == keys.Role.GATEWAY and isinstance(batch, ToolCallBatch)
    assert (batch.agent, batch.purpose) == ("critic", "fact_check")
    assert [(c.call_id, c.name) for c in batch.calls] == [("j5c0", "calculator")]
    judge = batch.state.judge
    assert judge.phase == "tools" and judge.hops == 0
    assert judge.messages[0].content.startswith(prompts.VERIFY_TOOLS + "\nToday is ")
    assert judge.messages[-1].tool_calls[0].id == "j5c0"
    assert batch.state.messages == []  # the researcher's thread is not the fact-check's
    [(_, offered, _)] = deps.llm.requests
    assert [t.name for t in offered] == ["calculator"]  # exactly the researcher's scope


async def test_results_join_the_fact_checks_thread_and_the_summary_ends_it(deps_for: Any) -> None:
    asked = ChatMessage.assistant("", [])
    waiting = state(JudgeProgress(phase="tools", messages=[ChatMessage.user("check"), asked]))
    result = ToolCallResult(call_id="j5c0", name="calculator", status="ok", code="ok", result=437)
    back = command(ToolResults(purpose="fact_check", results=[result], state=waiting), step=6)
    s = arrived("critic", back)
    assert s.judge.hops == 1 and s.judge.messages[-1].role == "tool"
    assert s.messages == []
    deps = deps_for([turn(text("The calculator confirms 437."))])
    done = await advance("critic", back, s, deps)
    assert isinstance(done, RunState)
    assert done.judge.phase == "done" and done.judge.findings == "The calculator confirms 437."
    [(thread, offered, _)] = deps.llm.requests
    assert thread[-1].role == "tool" and len(offered) == len(TOOLS)


async def test_spent_hops_leave_the_model_no_tools(deps_for: Any) -> None:
    spent = JudgeProgress(
        phase="tools", messages=[ChatMessage.user("check")], hops=VERIFIER_TOOL_HOPS
    )
    s = state(spent)
    deps = deps_for([turn(tool_call("calculator"))])  # asks anyway: not offered, not sent
    done = await advance("critic", command(AgentTask(state=s)), s, deps)
    assert isinstance(done, RunState) and done.judge.phase == "done"
    [(_, offered, _)] = deps.llm.requests
    assert offered == ()


async def test_without_sources_or_tools_the_fact_check_is_done_at_once(deps_for: Any) -> None:
    s = state(use_tools=False)
    deps = deps_for()
    done = await advance("critic", command(AgentTask(state=s)), s, deps)
    assert isinstance(done, RunState) and done.judge == JudgeProgress(phase="done")
    assert deps.llm.requests == []
    scoped_out = state(researcher_tools=[])
    done = await advance("critic", command(AgentTask(state=scoped_out)), scoped_out, deps)
    assert isinstance(done, RunState) and done.judge.phase == "done"


def test_only_the_last_judge_fact_checks_and_only_when_asked() -> None:
    assert runs_fact_check("critic", state())
    assert not runs_fact_check("verifier", state())
    assert runs_fact_check("verifier", state(accuracy="accurate"))
    assert not runs_fact_check("critic", state(accuracy="accurate"))
    assert not runs_fact_check("critic", state(verifier_check=False))
    assert not runs_fact_check("critic", state(mode="single"))


async def test_a_model_error_in_the_tool_pass_fails_open_and_says_so(deps_for: Any) -> None:
    s = state(JudgeProgress(phase="recheck"), sources=["documents"])
    deps = deps_for([])  # no turn left: the model call raises an LLMError
    done = await advance("critic", command(AgentTask(state=s)), s, deps)
    assert isinstance(done, RunState) and done.judge.phase == "done"
    assert "tool pass failed (llm_script_exhausted)" in done.judge.note


async def test_a_duration_the_question_spells_out_is_recomputed_when_the_model_plans_none(
    deps_for: Any,
) -> None:
    # The run from the issue: the planner's "17:50 - 14:05 = 35 minutes" was followed, and
    # the model's recompute plan names no check. The question's two clock times are sent.
    deps = deps_for([turn(text('{"checks": []}'))])
    s = RunState(
        question="A train leaves at 14:05 and arrives at 17:50. How long is the trip in minutes?",
        draft="The trip takes 35 minutes.",
        settings=RunSettings(mode="multi"),
    )
    moved = await advance("critic", command(AgentTask(state=s)), s, deps)
    assert isinstance(moved, StepResult)
    [sent] = moved.next
    batch = sent.payload
    assert isinstance(batch, ToolCallBatch) and sent.role == keys.Role.GATEWAY
    assert [(c.call_id, c.name, c.arguments) for c in batch.calls] == [
        ("j5r0", "calculator", {"expression": "17:50 - 14:05"})
    ]
    # The gateway's result comes back: 225 is not what the draft says, so it is a mismatch.
    result = ToolCallResult(
        call_id="j5r0",
        name="calculator",
        status="ok",
        code="ok",
        result={
            "expression": "17:50 - 14:05",
            "result": 225,
            "unit": "minutes",
            "text": "3 h 45 min",
        },
    )
    back = command(ToolResults(purpose="fact_check", results=[result], state=batch.state), step=6)
    done = await advance("critic", back, arrived("critic", back), deps)
    assert isinstance(done, RunState) and done.judge.phase == "done"
    [mismatch] = done.judge.mismatches
    assert "225 minutes (3 h 45 min)" in mismatch


async def test_a_figure_the_evidence_does_not_hold_is_a_mismatch_without_any_tool(
    deps_for: Any,
) -> None:
    evidence = EvidenceItem(
        ref=1,
        source_kind="documents",
        source="policy",
        text="The daily meal allowance (per diem) is 62 EUR in Germany and 48 EUR in Portugal.",
    )
    s = RunState(
        question="What is the daily meal allowance in Germany?",
        draft="The daily meal allowance in Germany is 68 EUR [1].",
        settings=RunSettings(mode="multi", use_tools=False),
        evidence=[evidence],
    )
    done = await advance("critic", command(AgentTask(state=s)), s, deps_for())
    assert isinstance(done, RunState) and done.judge.phase == "done"
    assert done.judge.mismatches
    assert all("the draft states 68" in m for m in done.judge.mismatches)
    # 68 is said of Germany, whose allowance the evidence states as 62 (not Portugal's 48).
    assert any("the evidence states 62 EUR in Germany" in m for m in done.judge.mismatches)


@pytest.mark.parametrize(
    ("question", "draft", "backwards", "forwards"),
    [
        (
            "A night shift starts at 21:40 and ends at 06:15. How long is the shift?",
            "The shift lasts 8 h 35 min.",
            "21:40 - 06:15",
            "06:15 - 21:40",
        ),
        (
            "How many days are there from 2027-01-20 to 2027-04-02?",
            "There are 72 days.",
            "2027-01-20-2027-04-02",
            "2027-04-02 - 2027-01-20",
        ),
    ],
)
async def test_a_recompute_the_model_writes_the_wrong_way_round_is_not_sent(
    deps_for: Any, question: str, draft: str, backwards: str, forwards: str
) -> None:
    # Its result (a negative count of days, 20 h 40 min for a night) would tell the
    # researcher to answer a right draft with a wrong figure. The duration the question
    # asks for is recomputed the way round it asks, in its place.
    plan = json.dumps({"checks": [{"expression": backwards, "claim": "the duration"}]})
    deps = deps_for([turn(text(plan))])
    s = RunState(question=question, draft=draft, settings=RunSettings(mode="multi"))
    moved = await advance("critic", command(AgentTask(state=s)), s, deps)
    assert isinstance(moved, StepResult)
    [sent] = moved.next
    batch = sent.payload
    assert isinstance(batch, ToolCallBatch)
    assert [c.arguments["expression"] for c in batch.calls] == [forwards]
