"""The critic: reviews the answer against the evidence; OK, REVISE or REPLAN plus a reason.

The verdict is asked for under a JSON schema (`agents.checks.verdicts.CRITIC_SCHEMA`) and read
tolerantly; a reply that cannot be read is ``UNKNOWN``: shown as such, never as OK, and it
sends nobody back (there is no reason to give). The critique is shown as a ``critique``
event (verdict and reason, read from the reply), never applied to the answer; the reply's
JSON text itself is not streamed to clients. REVISE sends
the researcher back, REPLAN the planner; both share ``MAX_ATTEMPTS``, after which the run
proceeds whatever the verdict. A fact-check that recomputed a figure and found the draft's
wrong (`agents.checks.recompute`) makes the verdict REVISE, whatever the model said. The
model's own REVISE or REPLAN of a draft judged against evidence counts only when it quotes
evidence that states otherwise (`agents.checks.flag_evidence`), or names a claim of the
draft whose evidence, set beside it, does; else it is ``UNKNOWN``. A
claim the model says the evidence set beside it states otherwise, founded the same way,
makes the verdict REVISE (`agents.checks.claim_verdicts`).
"""

from __future__ import annotations

import dataclasses

from agents import gates, graph
from agents.checks import claim_verdicts, judge
from agents.checks.verdicts import CRITIC_SCHEMA, parse_critique, quotes
from agents.deps import AgentDeps
from agents.llm.json_reply import json_object
from agents.llm.ports import TextDelta, Usage
from agents.state import (
    add_usage,
    another_attempt,
    llm_options,
    retry_state,
    superseded,
    toward,
)
from bus.commands import AgentTask, Command
from bus.events import ClientEvent, Critique
from bus.run_state import Review
from bus.runtime.context import StepContext, StepResult
from bus.runtime.worker import Handler

AGENT = "critic"


def make_critic(deps: AgentDeps) -> Handler:
    """The critic role's handler."""

    async def handle(ctx: StepContext, command: Command) -> StepResult:
        checking, state, request = await judge.review_input(AGENT, command, deps)
        if checking is not None:
            return checking
        s = state.settings
        parts: list[str] = []
        usage: Usage | None = None
        options = llm_options(
            s, AGENT, response_schema=CRITIC_SCHEMA, max_tokens=300, temperature=0
        )
        async for event in deps.llm.stream(request, (), options):
            if isinstance(event, TextDelta):
                parts.append(event.text)
            elif isinstance(event, Usage):
                usage = event
        reply = "".join(parts)
        verdict, reason = parse_critique(reply)
        if verdict in ("REVISE", "REPLAN") and not state.judge.mismatches:
            # The model's own flag counts only when founded (`agents.checks.flag_evidence`).
            draft_says, evidence_says = quotes(reply)
            why = judge.flag_unfounded(AGENT, state, deps, draft_says, evidence_says)
            named = None if why is None else judge.named_claim(AGENT, state, deps, draft_says)
            if named is not None:  # its quote is not the evidence's words; the claim it names is
                reason = "; ".join(r for r in (reason, claim_verdicts.reason(named)) if r)
            elif why is not None:
                verdict, reason = "UNKNOWN", f"{verdict} not counted: {why}; {reason}"
        if verdict not in ("REVISE", "REPLAN") and not state.judge.mismatches:
            # A claim the model says the evidence beside it states otherwise, founded.
            flagged = judge.claim_flag(AGENT, state, deps, json_object(reply))
            if flagged is not None:
                verdict, reason = "REVISE", claim_verdicts.reason(flagged)
        if state.judge.mismatches:
            verdict, reason = "REVISE", "; ".join(state.judge.mismatches)
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
        state = state.evolve(usage=add_usage(state.usage, usage, AGENT))
        events: list[ClientEvent] = [shown]
        outcome = verdict.lower()
        draft, sent_back = state.draft, None
        # A team sends the draft back only where it has an edge for the verdict.
        if (
            outcome in ("revise", "replan")
            and another_attempt(state)
            and graph.has_edge(s, AGENT, outcome)
        ):
            events.append(superseded(command, state, review))
            state, sent_back = retry_state(state, review), review
        else:
            outcome = "ok"
            state = state.evolve(critiques=[*state.critiques, review])
        node = graph.next_node(s, AGENT, outcome)
        if node == "answer_gate":
            paused = await gates.suspend(
                ctx, deps, state, "approve_answer", answer=state.draft, critique=reason
            )
            return dataclasses.replace(paused, events=[*events, *paused.events])
        state = toward(state, node, draft, sent_back)
        target = graph.role_of(s, node)
        return StepResult(next=[command.follow(target, AgentTask(state=state))], events=events)

    return handle
