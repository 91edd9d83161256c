"""Shared agent state: what several roles do to the run state, in one place.

Token accounting, the reflection loop's retry, the tools a run's models are offered, and
the tool calls and results of a model's thread. Role modules import this module and the
graph, never each other.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agents import graph
from agents.llm.ports import LLMOptions, ToolDefinition, Usage
from agents.teams.pinned import handoff
from bus.commands import Command, ToolCallRequest, ToolCallResult
from bus.events import DraftSuperseded
from bus.json_values import is_object
from bus.run_state import (
    COST_KEY,
    ChatMessage,
    JudgeProgress,
    Review,
    RunSettings,
    RunState,
    ToolCall,
)
from bus.team_run import TeamProgress


def add_usage(total: dict[str, int], usage: Usage | None, agent: str) -> dict[str, int]:
    """Token counts per agent and overall, and the cost, accumulated over the run."""
    if usage is None:
        return total
    out = dict(total)
    for key, value in (
        ("prompt_tokens", usage.prompt_tokens),
        ("completion_tokens", usage.completion_tokens),
        (f"{agent}_tokens", usage.total_tokens),
    ):
        out[key] = out.get(key, 0) + value
    if usage.cost_usd:
        out[COST_KEY] = out.get(COST_KEY, 0) + round(usage.cost_usd * 1_000_000)
    return out


def llm_options(
    settings: RunSettings,
    agent: str,
    *,
    think: bool = False,
    response_schema: dict[str, Any] | None = None,
    max_tokens: int | None = None,
    temperature: float | None = None,
    require_tool: bool = False,
) -> LLMOptions:
    """One agent's model call options: the agent's model (its own, else the run's)."""
    return LLMOptions(
        model=settings.agent_models.get(agent) or settings.model,
        think=think,
        response_schema=response_schema,
        max_tokens=max_tokens,
        temperature=temperature,
        require_tool=require_tool,
    )


def another_attempt(state: RunState) -> bool:
    """True while the reflection loop may send the run back once more."""
    return state.attempts + 1 < graph.MAX_ATTEMPTS


def superseded(command: Command, state: RunState, feedback: Review) -> DraftSuperseded:
    """The event telling clients the current draft was sent back (shown before the retry)."""
    return DraftSuperseded(
        run_id=command.run_id,
        step_id=command.step_id,
        agent=feedback.agent,
        attempt=state.attempts,
        reason=feedback.reason,
    )


def retry_state(state: RunState, feedback: Review) -> RunState:
    """The state for another attempt: the researcher's turns dropped, feedback kept."""
    base = state.messages[: state.base_len] if state.base_len else state.messages
    return state.evolve(
        attempts=state.attempts + 1,
        messages=base,
        draft=None,
        draft_citations=None,
        tool_hops=0,
        judge=JudgeProgress(),
        critiques=[*state.critiques, feedback],
    )


def toward(
    state: RunState, node: str, draft: str | None = None, feedback: Review | None = None
) -> RunState:
    """The state a built-in node hands on to ``node``: itself, unless ``node`` is a
    declared agent of the run's team. Then the `agent` role runs that agent (its progress
    points at it), its tool hops start again, and its thread is the conversation and the
    question, then what it is handed: the answer so far (``draft``, else the run's), the
    structured outputs given since, and the judge's ``feedback`` when it was sent back."""
    if node not in graph.declared_agents(state.settings):
        return state
    progress = (state.team_run or TeamProgress()).at(node)
    drafted = any(t.output is None for t in progress.turns)
    given = handoff((draft or state.draft) if drafted else None, progress.turns)
    parts = [given] if given else []
    if feedback is not None:
        parts.append(f"The {feedback.agent} asked for another attempt: {feedback.reason}")
    base = state.messages[: state.base_len]
    thread = [*base, ChatMessage.user("\n\n".join(parts))] if parts else base
    return state.evolve(team_run=progress, messages=thread, tool_hops=0)


def scoped_tools(tools: Sequence[ToolDefinition], settings: RunSettings) -> list[ToolDefinition]:
    """The tools a run's models are offered: none without tools, the tenant's scope in multi.

    The researcher and the fact-check get the same ones; the gateway enforces the scope.
    """
    if not settings.use_tools:
        return []
    if settings.mode == "single" or settings.researcher_tools is None:
        return list(tools)
    allowed = set(settings.researcher_tools)
    return [t for t in tools if t.name in allowed]


def offered_tools(tools: Sequence[ToolDefinition], settings: RunSettings) -> list[ToolDefinition]:
    """The researcher's tools: the tools its client declared, those whose names no tool of
    the tenant's has (a client's tool never shadows the gateway's), then the run's scope of
    the tenant's (`scoped_tools`).

    The client's come first: they are what its request is about, and a small local model
    picks among the first tools it reads (the 0.5B answered a client's weather question
    with ``web_search`` while ``get_weather`` came last, and called it when it came first).
    """
    scoped = scoped_tools(tools, settings)
    if not settings.client_tools:
        return scoped
    taken = {t.name for t in tools}
    client = [
        ToolDefinition(name=t.name, description=t.description, parameters=t.parameters)
        for t in settings.client_tools
        if t.name not in taken
    ]
    return [*client, *scoped]


def client_pending(state: RunState) -> list[ToolCall]:
    """The calls of client-declared tools the last gateway round trip left to the client
    (their results came back ``client_pending``), in call order; none without client tools."""
    if not state.settings.client_tools:
        return []
    waiting: set[str] = set()
    for message in reversed(state.messages):
        if message.role != "tool":
            break
        if message.tool_call_id and _pending(message.content):
            waiting.add(message.tool_call_id)
    if not waiting:
        return []
    return [c for m in state.messages for c in m.tool_calls if c.id in waiting]


def _pending(content: str) -> bool:
    try:
        body = json.loads(content)
    except ValueError:
        return False
    return is_object(body) and body.get("status") == "client_pending"


def own_calls(calls: Sequence[ToolCall], prefix: str) -> list[ToolCall]:
    """The model's calls under our own ids, ``{prefix}c{i}``: deterministic per run step.

    The gateway's exactly-once record is keyed by them; the model only needs them to pair
    calls with results.
    """
    return [c.model_copy(update={"id": f"{prefix}c{i}"}) for i, c in enumerate(calls)]


def requests(calls: Sequence[ToolCall]) -> list[ToolCallRequest]:
    """The gateway's requests for calls that already have our own ids."""
    return [ToolCallRequest(call_id=c.id, name=c.name, arguments=c.arguments) for c in calls]


def tool_message(result: ToolCallResult) -> ChatMessage:
    """The TOOL message the model reads: the call's outcome as JSON data."""
    body: dict[str, Any] = {"status": result.status, "code": result.code}
    if result.message:
        body["message"] = result.message
    if result.status == "ok":
        body["result"] = result.result
    if result.truncated:
        body["truncated"] = True
    if result.blocked_host:
        body["blocked_host"] = result.blocked_host
    content = json.dumps(body, ensure_ascii=False, default=str)
    return ChatMessage(role="tool", tool_call_id=result.call_id, name=result.name, content=content)


def with_results(
    thread: Sequence[ChatMessage], results: Sequence[ToolCallResult]
) -> list[ChatMessage]:
    """A thread with the gateway's results appended, in call order."""
    return [*thread, *(tool_message(r) for r in results)]
