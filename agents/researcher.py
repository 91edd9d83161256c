"""The researcher: one model turn per step; tool calls go to the gateway, never run here.

A step streams the turn's reasoning and answer tokens, then either publishes the tool
calls for the gateway (which sends the results back to this role as TOOL messages) or
hands the answer to the next role. After ``max_tool_hops`` gateway round trips a further
tool request ends the run with a fixed "I don't know" answer (``tool_loop_exhausted``).
"""

from __future__ import annotations

import dataclasses

from agents import gates, graph, model_input, prompts
from agents.deps import AgentDeps
from agents.llm.ports import (
    ChatMessage,
    LLMOptions,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolDefinition,
    Usage,
)
from agents.streaming import TokenBatcher
from bus.commands import AgentTask, Command, RunState, ToolCallBatch, ToolCallRequest
from bus.events import Answer
from bus.runtime.context import StepContext, StepResult
from bus.runtime.worker import Handler

AGENT = "researcher"


def add_usage(total: dict[str, int], usage: Usage | None, agent: str) -> dict[str, int]:
    """Token counts per agent and overall, accumulated over the run."""
    if usage is None:
        return total
    out = dict(total)
    for key, value in (
        ("prompt_tokens", usage.prompt_tokens),
        ("completion_tokens", usage.completion_tokens),
        (f"{agent}_tokens", usage.total_tokens),
    ):
        out[key] = out.get(key, 0) + value
    return out


def scoped_tools(deps: AgentDeps, state: RunState) -> list[ToolDefinition]:
    """The tools offered to the researcher: none without tools; the tenant's scope in multi."""
    s = state.settings
    if not s.use_tools:
        return []
    if s.mode == "single" or s.researcher_tools is None:
        return list(deps.tools)
    allowed = set(s.researcher_tools)
    return [t for t in deps.tools if t.name in allowed]


def make_researcher(deps: AgentDeps) -> Handler:
    """The researcher role's handler."""

    async def handle(ctx: StepContext, command: Command) -> StepResult:
        task = command.payload
        if not isinstance(task, AgentTask):
            raise TypeError(f"researcher got a {task.kind} payload")
        state = task.state
        if state.settings.mode != "single" and deps.checkpoints is not None:
            blocked = gates.blocked_call(state)
            if blocked is not None:  # the egress gate: a person decides, the run waits
                return await gates.suspend(ctx, deps, state, "egress_approval", blocked=blocked)
        history = state.messages
        prompt = model_input.research_messages(state)
        tools = scoped_tools(deps, state)
        batcher = TokenBatcher(ctx, AGENT)
        text: list[str] = []
        calls: list[ToolCall] = []
        usage: Usage | None = None
        options = LLMOptions(think=state.settings.think)
        async for event in deps.llm.stream(prompt, tools, options):
            if isinstance(event, ReasoningDelta):
                await batcher.add("reasoning", event.text)
            elif isinstance(event, TextDelta):
                text.append(event.text)
                await batcher.add("answer", event.text)
            elif isinstance(event, ToolCall):
                calls.append(event)
            else:
                usage = event
            if batcher.cancelled:
                return StepResult.ending(command, "cancelled", "cancelled while answering")
        tail = batcher.drain()  # written with the commit
        answer = "".join(text)
        spent = add_usage(state.usage, usage, AGENT)
        if calls and tools:
            if state.tool_hops >= state.settings.max_tool_hops:
                result = _exhausted(command, state, spent)
            else:
                result = _to_gateway(command, state, history, answer, calls, spent)
        else:
            done = [*history, ChatMessage.assistant(answer)]
            new_state = state.model_copy(update={"messages": done, "draft": answer, "usage": spent})
            target = graph.next_role(state.settings, "researcher", "answer")
            result = StepResult(next=[command.follow(target, AgentTask(state=new_state))])
        return dataclasses.replace(result, events=[*tail, *result.events])

    return handle


def _to_gateway(
    command: Command,
    state: RunState,
    history: list[ChatMessage],
    answer: str,
    calls: list[ToolCall],
    spent: dict[str, int],
) -> StepResult:
    # Our own call ids, deterministic per run step: the gateway's exactly-once record
    # is keyed by them, and the model only needs them to pair calls with results.
    ids = [f"s{command.step}c{i}" for i in range(len(calls))]
    requests = [
        ToolCallRequest(call_id=cid, name=c.name, arguments=c.arguments)
        for cid, c in zip(ids, calls, strict=True)
    ]
    assistant = ChatMessage.assistant(
        answer, [c.model_copy(update={"id": cid}) for cid, c in zip(ids, calls, strict=True)]
    )
    new_state = state.model_copy(update={"messages": [*history, assistant], "usage": spent})
    target = graph.next_role(state.settings, "researcher", "tool_calls")
    batch = ToolCallBatch(agent=AGENT, calls=requests, state=new_state)
    return StepResult(next=[command.follow(target, batch)])


def _exhausted(command: Command, state: RunState, spent: dict[str, int]) -> StepResult:
    answer = prompts.TOOL_LOOP_EXHAUSTED
    new_state = state.model_copy(
        update={"draft": answer, "usage": spent, "stop_reason": "tool_loop_exhausted"}
    )
    target = graph.next_role(state.settings, "researcher", "answer")
    shown = Answer(run_id=command.run_id, step_id=command.step_id, agent=AGENT, delta=answer)
    return StepResult(next=[command.follow(target, AgentTask(state=new_state))], events=[shown])
