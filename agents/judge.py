"""The judge fact-check, run by the last judge (critic in standard, verifier in accurate).

Two independent, bounded checks, each failing open: a re-query of the retrieval sources
(a gather whose merge returns here) and a verify-only tool pass of at most
``VERIFIER_TOOL_HOPS`` gateway round trips. Progress lives in ``state.judge``, so the
judge's worker keeps nothing between the steps.
"""

from __future__ import annotations

from agents import graph, model_input, prompts
from agents.deps import AgentDeps
from agents.gather import fan_out
from agents.llm.ports import LLMOptions, TextDelta
from bus.commands import AgentTask, Command, ToolCallBatch, ToolCallRequest
from bus.keys import Role
from bus.run_state import ChatMessage, RunState, ToolCall
from bus.runtime.context import StepResult

VERIFIER_TOOL_HOPS = 2


def runs_fact_check(node: str, state: RunState) -> bool:
    """True when this judge is the last one and the fact-check is on."""
    return state.settings.verifier_check and graph.last_judge(state.settings) == node


async def review_input(
    node: str, command: Command, deps: AgentDeps
) -> tuple[StepResult | None, RunState, list[ChatMessage]]:
    """A judge's start: run the fact-check if this judge owns it, then what to review.

    Returns:
        A step to publish while the fact-check is under way (None once it is done), the
        state, and the messages the judge's own call reads.
    """
    task = command.payload
    if not isinstance(task, AgentTask):
        raise TypeError(f"{node} got a {task.kind} payload")
    state = task.state
    if runs_fact_check(node, state) and state.judge.phase != "done":
        moved = await advance(node, command, state, deps)
        if isinstance(moved, StepResult):
            return moved, state, []
        state = moved
    s = state.settings
    system = prompts.for_agent(node, s.agent_prompts, s.mode)
    return None, state, model_input.review_messages(system, state, state.judge.findings)


async def advance(
    node: str, command: Command, state: RunState, deps: AgentDeps
) -> StepResult | RunState:
    """Run the fact-check's next move: a step to publish, or the state once it is done."""
    judge = state.judge
    if judge.phase is None and state.settings.sources:
        rechecking = state.model_copy(
            update={"judge": judge.model_copy(update={"phase": "recheck"})}
        )
        return StepResult(next=fan_out(command, rechecking, "recheck", node))
    if judge.phase in (None, "recheck"):
        judge = judge.model_copy(update={"phase": "tools"})
    if judge.phase == "tools":
        step = await _tool_pass(node, command, state.model_copy(update={"judge": judge}), deps)
        if isinstance(step, StepResult):
            return step
        judge = step.judge
    return state.model_copy(update={"judge": judge.model_copy(update={"phase": "done"})})


async def _tool_pass(
    node: str, command: Command, state: RunState, deps: AgentDeps
) -> StepResult | RunState:
    judge = state.judge
    tools = list(deps.tools) if state.settings.use_tools else []
    hops = judge.hops
    if not tools:
        return state
    thread = judge.messages
    if not thread:
        thread = model_input.review_messages(prompts.VERIFY_TOOLS, state)
    offered = tools if hops < VERIFIER_TOOL_HOPS else []
    text: list[str] = []
    calls: list[ToolCall] = []
    async for event in deps.llm.stream(thread, offered, LLMOptions(max_tokens=400)):
        if isinstance(event, TextDelta):
            text.append(event.text)
        elif isinstance(event, ToolCall):
            calls.append(event)
    if calls and offered:
        ids = [f"j{command.step}c{i}" for i in range(len(calls))]
        assistant = ChatMessage.assistant(
            "".join(text), [c.model_copy(update={"id": i}) for i, c in zip(ids, calls, strict=True)]
        )
        judge = judge.model_copy(update={"messages": [*thread, assistant], "hops": hops + 1})
        batch = ToolCallBatch(
            agent=node,
            thread="judge",
            calls=[
                ToolCallRequest(call_id=i, name=c.name, arguments=c.arguments)
                for i, c in zip(ids, calls, strict=True)
            ],
            state=state.model_copy(update={"judge": judge}),
        )
        return StepResult(next=[command.follow(Role.GATEWAY, batch)])
    findings = "".join(text).strip()
    return state.model_copy(update={"judge": judge.model_copy(update={"findings": findings})})
