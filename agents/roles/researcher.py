"""The researcher: one model turn per step; tool calls go to the gateway, never run here.

A step streams the turn (`agents.turn`, shared with the declared agents of a team), then
either publishes the tool calls for the gateway or hands the answer to the next role. The
answer's citation markers are checked as they stream (`retrieval.citations.CitationCheck`):
every number the turn may cite was shown before it began, so the text clients receive is
the checked answer the store keeps. The gateway's results come back as a `ToolResults`
payload, which this role appends to its own thread as TOOL messages (data, never
instructions), counting the round trip. After ``max_tool_hops`` round trips a further tool
request ends the run with a fixed "I don't know" answer (``tool_loop_exhausted``). The
tools the client declared for the run are offered too; when the gateway leaves calls of
them to the client (``client_pending``) the run pauses at the ``client_tool`` gate until
the client sends their results (`agents.gates`). A draft that is not an answer (a tool's
payload or error echoed, the prompt's words, a runaway repetition: `agents.checks.answer_guard`)
is superseded by one sentence saying what could not be done and why. A run whose answer
must be a JSON document (``answer_schema``) asks the model for one under that schema, and
its text is left as the model wrote it (`agents.turn.Verbatim`: a ``[1]`` in a document is
data, not a citation).
"""

from __future__ import annotations

import dataclasses

from agents import gates, graph, model_input, prompts
from agents.checks import answer_guard
from agents.deps import AgentDeps, tenant_tools
from agents.metrics import first_answer_token
from agents.state import (
    add_usage,
    client_pending,
    llm_options,
    offered_tools,
    own_calls,
    requests,
    with_results,
)
from agents.turn import Asked, Verbatim, run_refs, stream_turn, streamed_so_far, superseding
from bus.commands import AgentTask, Command, ToolCallBatch, ToolResults
from bus.events import Answer, ClientEvent
from bus.run_state import ChatMessage, DraftCitations, RunState, ToolCall
from bus.runtime.context import StepContext, StepResult
from bus.runtime.worker import Handler
from retrieval.citations import CitationCheck, refs_end

AGENT = "researcher"


def arrived(command: Command) -> RunState:
    """The state a step starts from: the gateway's results appended, one more round trip."""
    task = command.payload
    if isinstance(task, ToolResults):
        state = task.state
        return state.evolve(
            messages=with_results(state.messages, task.results), tool_hops=state.tool_hops + 1
        ).refs_used_to(max(task.next_ref, refs_end(task.results)))
    if isinstance(task, AgentTask):
        return task.state
    raise TypeError(f"researcher got a {task.kind} payload")


def make_researcher(deps: AgentDeps) -> Handler:
    """The researcher role's handler."""

    async def handle(ctx: StepContext, command: Command) -> StepResult:
        state = arrived(command)
        gated = deps.checkpoints is not None
        if gated and graph.has_edge(state.settings, AGENT, "egress_blocked"):
            blocked = gates.blocked_call(state)
            if blocked is not None:  # the egress gate: a person decides, the run waits
                return await gates.suspend(ctx, deps, state, "egress_approval", blocked=blocked)
        waiting = client_pending(state)
        if waiting:  # the client runs its own tools: the run waits for their results
            return await gates.suspend(ctx, deps, state, "client_tool", client_calls=waiting)
        history = state.messages
        tools = offered_tools(await tenant_tools(deps, command.tenant_id), state.settings)
        # Every number the answer may cite is known now: check markers as they stream, so
        # what clients receive is the checked answer (held back only from "[" to its "]").
        schema = state.settings.answer_schema
        check = CitationCheck(run_refs(state)) if schema is None else Verbatim()
        think = state.settings.think
        options = llm_options(
            state.settings,
            AGENT,
            think=think,
            response_schema=schema,
            max_tokens=answer_guard.turn_tokens(think),
            require_tool=state.settings.client_tool_required and bool(tools),
        )
        asked = Asked(
            prompt=model_input.research_messages(state),
            tools=tools,
            options=options,
            thread=history,
            question=state.question,
            agent=AGENT,
            attempt=state.attempts,
        )
        turn = await stream_turn(ctx, deps.llm, asked, check)
        if turn.cancelled:
            return StepResult.ending(command, "cancelled", "cancelled while answering")
        answer = turn.text
        spent = add_usage(state.usage, turn.usage, AGENT)
        if turn.rejection is None:
            tally = (state.draft_citations or DraftCitations()).plus(
                [c.ref for c in check.citations], check.stripped
            )
            state = state.evolve(draft_citations=tally)
        if turn.calls_tools:
            if state.tool_hops >= state.settings.max_tool_hops:
                result = _exhausted(command, state, spent, answer)
            else:
                result = _to_gateway(command, state, history, answer, turn.calls, spent)
            return dataclasses.replace(result, events=[*turn.tail, *result.events])
        state = state.evolve(usage=spent)
        if turn.first_at and not state.first_token_at:  # the run's first answer token
            first_answer_token(state, turn.first_at)
            state = state.evolve(first_token_at=turn.first_at)
        result = _answered(command, state, history, answer, turn.rejection)
        return dataclasses.replace(result, events=[*turn.tail, *result.events])

    return handle


def _answered(
    command: Command,
    state: RunState,
    history: list[ChatMessage],
    answer: str,
    rejection: answer_guard.Rejection | None,
) -> StepResult:
    """The answer goes to the next role; a draft that is no answer is superseded first by
    the words that replace it (`agents.turn.superseding`), which alone become the draft."""
    events: list[ClientEvent] = []
    draft = streamed_so_far(state) + answer
    if rejection is not None:
        answer, events = superseding(command, state, rejection, AGENT, state.attempts)
        draft = answer
    done = [*history, ChatMessage.assistant(answer)]
    new_state = state.evolve(messages=done, draft=draft)
    target = graph.next_role(state.settings, AGENT, "answer")
    return StepResult(next=[command.follow(target, AgentTask(state=new_state))], events=events)


def _to_gateway(
    command: Command,
    state: RunState,
    history: list[ChatMessage],
    answer: str,
    calls: list[ToolCall],
    spent: dict[str, int],
) -> StepResult:
    calls = own_calls(calls, f"s{command.step}")
    assistant = ChatMessage.assistant(answer, calls)
    new_state = state.evolve(messages=[*history, assistant], usage=spent)
    target = graph.next_role(state.settings, AGENT, "tool_calls")
    batch = ToolCallBatch(agent=AGENT, calls=requests(calls), state=new_state)
    return StepResult(next=[command.follow(target, batch)])


def _exhausted(
    command: Command, state: RunState, spent: dict[str, int], turn_text: str
) -> StepResult:
    before = streamed_so_far(state) + turn_text
    fallback = ("\n\n" if before else "") + prompts.TOOL_LOOP_EXHAUSTED
    new_state = state.evolve(
        draft=before + fallback, usage=spent, stop_reason="tool_loop_exhausted"
    )
    target = graph.next_role(state.settings, AGENT, "answer")
    shown = Answer(
        run_id=command.run_id,
        step_id=command.step_id,
        agent=AGENT,
        delta=fallback,
        attempt=state.attempts,
    )
    return StepResult(next=[command.follow(target, AgentTask(state=new_state))], events=[shown])
