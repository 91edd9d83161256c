"""Judges that judge (issue 28), on a real Redis and store: a wrong figure is recomputed
through the gateway and sent back, and every run ends saying what its judges concluded."""

from __future__ import annotations

from collections.abc import Sequence

from agents import prompts
from agents.llm.ports import ChatMessage, LLMEvent, LLMOptions, ToolDefinition
from agents.llm.scripted import ScriptedLLM, agent_of, text, turn
from bus.events import Critique, Plan, ToolCallStarted, Verdict
from bus.store import Scope
from tests.integration.agents.events import final, of_type
from tests.integration.agents.system import StartSystem

TRAIN = "A train leaves at 14:05 and arrives at 17:50. How long is the trip in minutes?"


def train_model(critic_reply: str = '{"verdict": "OK", "reason": "looks right"}') -> ScriptedLLM:
    """The issue's run: a plan that states a result, a researcher that follows it (35) until
    a reviewer's reason says otherwise, a critic that approves whatever it reads."""

    def script(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ):
        first = messages[0].content
        if first.startswith(prompts.RECOMPUTE):
            return turn(text('{"checks": [{"claim": "35", "expression": "17:50 - 14:05"}]}'))
        role = agent_of(messages, options)
        if role == "planner":
            return turn(text('{"plan": ["Duration: 17:50 - 14:05 = 35 minutes"]}'))
        if role == "critic":
            return turn(text(critic_reply))
        if role == "verifier":
            return turn(text('{"verdict": "pass", "reasons": ["fine"]}'))
        told = " ".join(m.content for m in messages if m.role == "system")
        return turn(
            text("The trip takes 225 minutes." if "225" in told else "It takes 35 minutes.")
        )

    return ScriptedLLM(script)


async def test_a_wrong_duration_is_recomputed_sent_back_and_then_verified(
    start_system: StartSystem,
) -> None:
    llm = train_model()
    system = await start_system(llm)
    events = await system.ask(TRAIN, mode="multi", accuracy="standard")
    [plan] = of_type(events, Plan)
    assert plan.steps == ["Duration: 17:50 - 14:05"]  # the plan's "= 35 minutes" is gone
    calls = [e for e in of_type(events, ToolCallStarted) if e.tool == "calculator"]
    assert [c.args for c in calls] == [{"expression": "17:50 - 14:05"}] * 2  # via the gateway
    critiques = of_type(events, Critique)
    assert [c.verdict for c in critiques] == ["REVISE", "OK"]  # the model said OK both times
    assert "225 minutes" in critiques[0].reason
    done = final(events)
    assert done.status == "done" and "225" in (done.answer or "")
    assert done.verified is True and (done.verified_reason or "").startswith("critic OK")
    # The researcher was told the plan carries no facts, and got the recomputed value.
    researcher_calls = [m for m, tools, _ in llm.requests if tools]
    told = " ".join(m.content for m in researcher_calls[-1] if m.role == "system")
    assert "carries no facts" in told and "225 minutes" in told
    stored = await system.stores.runs.get(Scope.user("t1", "alice"), done.run_id)
    assert stored is not None
    assert (stored.verified, stored.verified_reason) == (True, done.verified_reason)


async def test_an_unreadable_critique_is_unknown_and_never_verified(
    start_system: StartSystem,
) -> None:
    # The critic: its reply is the prompt's own instruction sentence.
    parrot = "OK if the answer is correct and supported, REVISE if the plan was sound but"
    system = await start_system(train_model(critic_reply=parrot))
    events = await system.ask(TRAIN, mode="multi", accuracy="standard", verifier_check=False)
    [critique] = of_type(events, Critique)
    assert critique.verdict == "UNKNOWN"
    done = final(events)
    assert done.status == "done" and done.verified is None
    assert "critic UNKNOWN" in (done.verified_reason or "")
    stored = await system.stores.runs.get(Scope.user("t1", "alice"), done.run_id)
    assert stored is not None and stored.verified is None and stored.verified_reason


async def test_a_mismatch_the_last_attempt_keeps_ends_not_verified(
    start_system: StartSystem,
) -> None:
    # Accurate mode: the verifier's recompute refutes 35 on both attempts (the researcher
    # here ignores the feedback), so the run ends verified false with the recomputed value.
    def stubborn(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ) -> list[LLMEvent]:
        first = messages[0].content
        if first.startswith(prompts.RECOMPUTE):
            return turn(text('{"checks": [{"claim": "35", "expression": "17:50 - 14:05"}]}'))
        role = agent_of(messages, options)
        if role == "planner":
            return turn(text('{"plan": ["Subtract the times"]}'))
        if role == "critic":
            return turn(text('{"verdict": "OK", "reason": "fine"}'))
        if role == "verifier":
            return turn(text('{"verdict": "pass", "reasons": ["fine"]}'))
        return turn(text("It takes 35 minutes."))

    system = await start_system(ScriptedLLM(stubborn))
    events = await system.ask(TRAIN, mode="multi", accuracy="accurate")
    verdicts = of_type(events, Verdict)
    assert [v.verdict for v in verdicts] == ["needs_revision", "needs_revision"]
    assert all("225 minutes" in v.reasons[0] for v in verdicts)
    done = final(events)
    assert done.status == "done" and done.verified is False
    assert "225 minutes" in (done.verified_reason or "")


async def test_a_single_mode_run_says_it_was_not_judged(start_system: StartSystem) -> None:
    system = await start_system(train_model())
    events = await system.ask(TRAIN, mode="single")
    done = final(events)
    assert done.verified is None and done.verified_reason == "not judged: single mode has no judges"


async def test_a_judge_that_plans_no_recompute_still_refutes_the_questions_duration(
    start_system: StartSystem,
) -> None:
    # The 0.5B's failure: its recompute plan names nothing. The question's two clock times
    # are recomputed through the gateway anyway, and 35 goes back with 225 in the reasons.
    def blind(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ) -> list[LLMEvent]:
        if messages[0].content.startswith(prompts.RECOMPUTE):
            return turn(text('{"checks": []}'))
        role = agent_of(messages, options)
        if role == "planner":
            return turn(text('{"plan": ["Subtract the times"]}'))
        if role == "critic":
            return turn(text('{"verdict": "OK", "reason": "looks right"}'))
        told = " ".join(m.content for m in messages if m.role == "system")
        return turn(text("It takes 225 minutes." if "225" in told else "It takes 35 minutes."))

    system = await start_system(ScriptedLLM(blind))
    events = await system.ask(TRAIN, mode="multi", accuracy="standard")
    calls = [e for e in of_type(events, ToolCallStarted) if e.tool == "calculator"]
    assert [(c.agent, c.args) for c in calls] == [("critic", {"expression": "17:50 - 14:05"})] * 2
    assert [c.verdict for c in of_type(events, Critique)] == ["REVISE", "OK"]
    done = final(events)
    assert done.status == "done" and "225" in (done.answer or "") and done.verified is True
