"""The finalizer: persist the answer, trace and verdict, extend the conversation, emit ``done``.

``done`` (and the stored run, and the reply to an external publisher) says what the judges
established: ``verified`` true, false or null (unknown), and why (`agents.checks.verified`): true
only when a recompute matched or a judge whose precision is measured for the run's model
approved (`agents.checks.judge_trust`).
"""

from __future__ import annotations

import time
from typing import Literal

from agents.checks import judge_trust
from agents.checks.verified import conclusion
from agents.deps import AgentDeps
from agents.graph import has_edge, next_role
from agents.understanding.memory.rules import worth_remembering
from bus import tracing, wire
from bus.commands import AgentTask, Command, MemoryTask, RunResult
from bus.events import ClientEvent, Done
from bus.run_state import RunState, usage_cost
from bus.runtime.context import StepContext, StepResult
from bus.runtime.worker import Handler
from bus.store import Exchange, RunStatus, Scope
from bus.store.turn_types import TurnEnd
from bus.transcript import stream_trace
from retrieval.citations import CheckedAnswer, check_answer_citations, citation_items

AGENT = "finalizer"
#: How long after its run ended the memory step may still start (its own deadline: a run
#: that ended near its deadline is still remembered).
MEMORY_DEADLINE_S = 3600.0


def checked_draft(state: RunState) -> CheckedAnswer:
    """The draft with its citations checked: as the researcher streamed it (then the text
    stays exactly what clients received), or checked here if it was not streamed."""
    draft = state.draft or ""
    if state.draft_citations is not None:
        tally = state.draft_citations
        items = citation_items(tally.refs, state.messages, state.evidence)
        return CheckedAnswer(draft, items, tally.stripped)
    # Keep only citations of chunks this run actually retrieved; strip the rest.
    return check_answer_citations(draft, state.messages, state.evidence)


def _trusted(deps: AgentDeps, state: RunState, judge: str) -> bool:
    """Whether ``judge``'s approval alone verifies: its model (its own, the run's, else the
    deployment's) has a measured precision for it."""
    s = state.settings
    model = s.agent_models.get(judge) or s.model or deps.llm.name
    return judge_trust.trusted(model, judge)


def make_finalizer(deps: AgentDeps) -> Handler:
    """The finalizer role's handler."""

    async def handle(ctx: StepContext, command: Command) -> StepResult:
        task = command.payload
        if not isinstance(task, AgentTask):
            raise TypeError(f"finalizer got a {task.kind} payload")
        state = task.state
        checked = checked_draft(state)
        answer = checked.answer
        # A rejected answer (answer-approval gate) ends the run without being committed.
        rejected = state.stop_reason == "rejected"
        final: Literal["done", "rejected"] = "rejected" if rejected else "done"
        status = RunStatus(final)
        verified, why = conclusion(
            state, lambda judge: _trusted(deps, state, judge), deps.clock().date()
        )
        cost = usage_cost(state.usage)
        if cost is not None:
            tracing.set_attributes({"agentbus.run.cost_usd": cost})
        trace = stream_trace(await ctx.stream_data())
        owner = Scope.user(command.tenant_id, command.subject)
        # The history holds the answer before the run reads as done: a client that sees
        # `done` and opens the conversation finds both messages.
        turn_end: TurnEnd | None = None
        with tracing.store_span("runs.end"):
            if state.conversation_id and not rejected:
                # The run's end, its question and answer in the conversation and its turn's
                # end, in one transaction (on the branch intake read: a new one when the
                # question edits a turn): a client that sees `done` and opens the
                # conversation finds both messages, and so does the turn that runs next.
                exchange = Exchange(
                    conversation_id=state.conversation_id,
                    question=state.question,
                    answer=answer,
                    parent_id=state.parent_message_id,
                )
                turn_end = await deps.runs.end_answered(
                    owner,
                    command.run_id,
                    exchange,
                    trace=trace,
                    usage=state.usage,
                    verified=verified,
                    verified_reason=why,
                )
            elif state.conversation_id:
                turn_end = await deps.runs.end_turn(
                    owner,
                    command.run_id,
                    status,
                    state.conversation_id,
                    answer=None,
                    trace=trace,
                    usage=state.usage,
                    verified=verified,
                    verified_reason=why,
                )
            else:
                await deps.runs.end(
                    owner,
                    command.run_id,
                    status,
                    answer=None if rejected else answer,
                    trace=trace,
                    usage=state.usage,
                    verified=verified,
                    verified_reason=why,
                )
        deps.fault("after_run_end")
        done = Done(
            run_id=command.run_id,
            step_id=command.step_id,
            agent=AGENT,
            status=final,
            answer=None if rejected else answer,
            usage=state.usage,
            cost_usd=cost,
            stop_reason=state.stop_reason,
            verified=verified,
            verified_reason=why,
        )
        replies: list[tuple[str, str]] = []
        if command.reply_to:
            result = RunResult(
                run_id=command.run_id,
                tenant_id=command.tenant_id,
                status=status.value,
                answer=None if rejected else answer,
                conversation_id=state.conversation_id,
                stop_reason=state.stop_reason,
                usage=state.usage,
                cost_usd=cost,
                verified=verified,
                verified_reason=why,
            )
            replies.append((command.reply_to, wire.encode(result)))
        events: list[ClientEvent] = [done]
        if checked.citations or checked.stripped:
            events.insert(0, checked.event(command.run_id, command.step_id, agent=AGENT))
        after: list[Command] = []
        if (
            not rejected
            and has_edge(state.settings, AGENT, "done")
            and worth_remembering(state.question)
        ):
            # Off the answer's path: the run is done when this step commits.
            remember = MemoryTask(
                question=state.question,
                conversation_id=state.conversation_id,
                message_id=turn_end.asked if turn_end else None,
                said_at=state.started_at or time.time(),
            )
            to = next_role(state.settings, AGENT, "done")
            deadline = max(command.deadline, time.time() + MEMORY_DEADLINE_S)
            after.append(command.follow(to, remember).with_deadline(deadline))
        return StepResult(
            next=after, events=events, finished=final, replies=replies, turn_end=turn_end
        )

    return handle
