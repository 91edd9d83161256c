"""The planner: one tool-free call producing a 1-3 step plan (and, with sources, which to query)."""

from __future__ import annotations

import json
import re

from agents import graph, prompts
from agents.deps import AgentDeps
from agents.llm.ports import ChatMessage, ReasoningDelta, TextDelta, Usage
from agents.sources import fan_out
from agents.state import add_usage, llm_options
from agents.streaming import TokenBatcher
from bus.commands import AgentTask, Command
from bus.events import Plan
from bus.runtime.context import StepContext, StepResult
from bus.runtime.worker import Handler

AGENT = "planner"
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s*")


def parse_plan(text: str) -> list[str]:
    """1-3 plan steps from the model's bullets (a bulletless reply is one step)."""
    steps = [_BULLET.sub("", line).strip() for line in text.splitlines()]
    steps = [s for s in steps if s]
    return steps[:3] or [text.strip() or "Answer the question directly."]


def plan_schema(sources: list[str]) -> dict[str, object]:
    """The JSON shape of a plan with chosen sources."""
    return {
        "type": "object",
        "properties": {
            "plan": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
            "sources": {"type": "array", "items": {"enum": sources}},
        },
        "required": ["plan", "sources"],
    }


def _structured(text: str, sources: list[str]) -> tuple[list[str], list[str]]:
    try:
        doc = json.loads(text)
        steps = [str(s) for s in doc.get("plan", [])][:3]
        chosen = [s for s in doc.get("sources", []) if s in sources]
    except (ValueError, AttributeError):
        return parse_plan(text), list(sources)
    # No usable choice: query every source rather than none.
    return steps or parse_plan(text), chosen or list(sources)


def make_planner(deps: AgentDeps) -> Handler:
    """The planner role's handler."""

    async def handle(ctx: StepContext, command: Command) -> StepResult:
        task = command.payload
        if not isinstance(task, AgentTask):
            raise TypeError(f"planner got a {task.kind} payload")
        state = task.state
        s = state.settings
        system = prompts.for_agent("planner", s.agent_prompts, s.mode)
        schema = None
        if s.sources:
            system += prompts.PLANNER_SOURCES.format(sources=", ".join(s.sources))
            schema = plan_schema(list(s.sources))
        question = state.interpreted or state.question
        request = [
            ChatMessage.system(prompts.dated(system, deps.clock())),
            ChatMessage.user(question),
        ]
        batcher = TokenBatcher(ctx, AGENT)
        parts: list[str] = []
        usage: Usage | None = None
        options = llm_options(s, AGENT, response_schema=schema)
        async for event in deps.llm.stream(request, (), options):
            if isinstance(event, TextDelta | ReasoningDelta):
                parts.append(event.text)
                if schema is None:
                    await batcher.add("reasoning", event.text)
            elif isinstance(event, Usage):
                usage = event
        tail = batcher.drain()
        text = "".join(parts)
        steps, chosen = _structured(text, list(s.sources)) if schema else (parse_plan(text), [])
        new_state = state.model_copy(
            update={
                "plan": steps,
                "chosen_sources": chosen,
                "usage": add_usage(state.usage, usage, AGENT),
            }
        )
        plan_event = Plan(run_id=command.run_id, step_id=command.step_id, agent=AGENT, steps=steps)
        events = [*tail, plan_event]
        target = graph.next_role(s, "planner", "planned")
        if graph.next_node(s, "planner", "planned") == "gather":
            return StepResult(next=fan_out(command, new_state, "evidence", target), events=events)
        return StepResult(next=[command.follow(target, AgentTask(state=new_state))], events=events)

    return handle
