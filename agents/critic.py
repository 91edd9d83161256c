"""The critic: reviews the answer against the evidence; OK, REVISE or REPLAN plus a reason.

The critique is shown (a ``critique`` event, its text streamed to the reasoning pane),
never applied to the answer. REVISE sends the researcher back, REPLAN the planner; both
share ``MAX_ATTEMPTS``, after which the run proceeds whatever the verdict.
"""

from __future__ import annotations

import dataclasses
import re

from agents import gates, graph, judge
from agents.deps import AgentDeps
from agents.llm.ports import TextDelta, Usage
from agents.state import add_usage, another_attempt, llm_options, retry_state, superseded
from agents.streaming import TokenBatcher
from bus.commands import AgentTask, Command
from bus.events import ClientEvent, Critique
from bus.run_state import CritiqueVerdict, Review
from bus.runtime.context import StepContext, StepResult
from bus.runtime.worker import Handler

AGENT = "critic"
_VERDICTS: dict[str, CritiqueVerdict] = {"OK": "OK", "REVISE": "REVISE", "REPLAN": "REPLAN"}
_VERDICT = re.compile(r"^\W*(OK|REVISE|REPLAN)\b[\s:.,-]*", re.IGNORECASE)


def parse_critique(text: str) -> tuple[CritiqueVerdict, str]:
    """(verdict, reason); a reply that starts with no verdict counts as OK (shown, not applied)."""
    match = _VERDICT.match(text)
    if not match:
        return "OK", text.strip()
    return _VERDICTS[match.group(1).upper()], text[match.end() :].strip()


def make_critic(deps: AgentDeps) -> Handler:
    """The critic role's handler."""

    async def handle(ctx: StepContext, command: Command) -> StepResult:
        checking, state, request = await judge.review_input(AGENT, command, deps)
        if checking is not None:
            return checking
        s = state.settings
        batcher = TokenBatcher(ctx, AGENT)
        parts: list[str] = []
        usage: Usage | None = None
        async for event in deps.llm.stream(request, (), llm_options(s, AGENT, max_tokens=300)):
            if isinstance(event, TextDelta):
                parts.append(event.text)
                await batcher.add("reasoning", event.text)
            elif isinstance(event, Usage):
                usage = event
        verdict, reason = parse_critique("".join(parts))
        if state.judge.note:
            reason = f"{reason} ({state.judge.note})" if reason else state.judge.note
        review = Review(agent=AGENT, verdict=verdict, reason=reason)
        shown = Critique(
            run_id=command.run_id,
            step_id=command.step_id,
            agent=AGENT,
            verdict=verdict,
            reason=reason,
        )
        state = state.model_copy(update={"usage": add_usage(state.usage, usage, AGENT)})
        events: list[ClientEvent] = [*batcher.drain(), shown]
        if verdict != "OK" and another_attempt(state):
            outcome = verdict.lower()
            events.append(superseded(command, state, review))
            state = retry_state(state, review)
        else:
            outcome = "ok"
            state = state.model_copy(update={"critiques": [*state.critiques, review]})
        if graph.next_node(s, "critic", outcome) == "answer_gate":
            paused = await gates.suspend(
                ctx, deps, state, "approve_answer", answer=state.draft, critique=reason
            )
            return dataclasses.replace(paused, events=[*events, *paused.events])
        target = graph.next_role(s, "critic", outcome)
        return StepResult(next=[command.follow(target, AgentTask(state=state))], events=events)

    return handle
