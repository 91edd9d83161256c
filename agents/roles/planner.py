"""The planner: one tool-free call producing a 1-3 step plan (and, with sources, which to query).

The plan is asked for under a JSON schema (a list of 1-3 steps) and read tolerantly (bullets
from a server that honours no schema). A plan carries steps, never results: a step that
states one ("17:50 - 14:05 = 35 minutes", "which is 372") is cut back to the work it
names, or dropped when nothing is left, so no figure reaches the researcher unchecked.
"""

from __future__ import annotations

import re

from agents import graph, prompts
from agents.deps import AgentDeps
from agents.llm.json_reply import json_object
from agents.llm.ports import ChatMessage, ReasoningDelta, TextDelta, Usage
from agents.sources import fan_out
from agents.state import add_usage, llm_options
from bus.commands import AgentTask, Command
from bus.events import Plan
from bus.json_values import is_array
from bus.runtime.context import StepContext, StepResult
from bus.runtime.worker import Handler

AGENT = "planner"
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s*")
# Where a step starts stating a result: "= 35", "equals 35", "which is 35", "is 35".
_RESULT = re.compile(
    r"\s*(?:=|≈|\bequals?\b|\bwhich (?:is|gives|makes)\b|\bresult(?:s|ing)? (?:is|in)\b|"
    r"\bthe answer is\b|\bgives\b|\bis\b)\s*[-+]?\$?€?\d",
    re.IGNORECASE,
)
_FIGURE = re.compile(r"\d+(?:[.,:]\d+)*")
# Conversion factors a step may name without stating a result.
_FACTORS = {"1", "2", "7", "10", "12", "24", "60", "100", "365", "1000", "3600"}
FALLBACK_STEP = "Answer the question directly."


def parse_plan(text: str) -> list[str]:
    """1-3 plan steps from the model's bullets (a bulletless reply is one step)."""
    steps = [_BULLET.sub("", line).strip() for line in text.splitlines()]
    steps = [s for s in steps if s]
    return steps[:3] or [text.strip() or "Answer the question directly."]


def steps_only(steps: list[str], question: str) -> list[str]:
    """The plan with every stated result removed.

    A step is cut where it starts stating a result (``=``, "which is", "equals" followed
    by a figure); a step that still names a figure the question does not hold is a
    result in disguise and is dropped. No step left: the fallback step.
    """
    given = set(_FIGURE.findall(question)) | _FACTORS
    kept: list[str] = []
    for step in steps:
        match = _RESULT.search(step)
        cut = step[: match.start()].rstrip(" :,;-") if match else step
        if not cut or any(f not in given for f in _FIGURE.findall(cut)):
            continue
        kept.append(cut)
    return kept or [FALLBACK_STEP]


def plan_schema(sources: list[str]) -> dict[str, object]:
    """The JSON shape of a plan: 1-3 steps, and with sources, which ones to query."""
    steps = {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3}
    if not sources:
        return {
            "type": "object",
            "properties": {"plan": steps},
            "required": ["plan"],
            "additionalProperties": False,
        }
    return {
        "type": "object",
        "properties": {"plan": steps, "sources": {"type": "array", "items": {"enum": sources}}},
        "required": ["plan", "sources"],
        "additionalProperties": False,
    }


def read_plan(text: str, sources: list[str]) -> tuple[list[str], list[str]]:
    """(steps, chosen sources) from the planner's reply: its JSON, else its bullets.

    No usable choice of sources means every source (rather than none).
    """
    doc = json_object(text)
    if doc is None:
        return parse_plan(text), list(sources)
    plan = doc.get("plan")
    steps = [str(s).strip() for s in plan if str(s).strip()][:3] if is_array(plan) else []
    picked = doc.get("sources")
    chosen: list[str] = [s for s in picked if s in sources] if is_array(picked) else []
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
        schema = plan_schema(list(s.sources))
        if s.sources:
            system += prompts.PLANNER_SOURCES.format(sources=", ".join(s.sources))
        question = state.interpreted or state.question
        request = [
            ChatMessage.system(prompts.dated(system, deps.clock())),
            ChatMessage.user(question),
        ]
        parts: list[str] = []
        usage: Usage | None = None
        options = llm_options(s, AGENT, response_schema=schema)
        async for event in deps.llm.stream(request, (), options):
            if isinstance(event, TextDelta | ReasoningDelta):
                parts.append(event.text)
            elif isinstance(event, Usage):
                usage = event
        text = "".join(parts)
        steps, chosen = read_plan(text, list(s.sources))
        steps = steps_only(steps, question)
        chosen = chosen if s.sources else []
        new_state = state.evolve(
            plan=steps, chosen_sources=chosen, usage=add_usage(state.usage, usage, AGENT)
        )
        plan_event = Plan(run_id=command.run_id, step_id=command.step_id, agent=AGENT, steps=steps)
        events = [plan_event]
        target = graph.next_role(s, "planner", "planned")
        if graph.next_node(s, "planner", "planned") == "gather":
            return StepResult(next=fan_out(command, new_state, "evidence", target), events=events)
        return StepResult(next=[command.follow(target, AgentTask(state=new_state))], events=events)

    return handle
