"""The researcher: one model turn per step; tool calls go to the gateway, never run here.

A step streams the turn's reasoning and answer tokens, then either publishes the tool
calls for the gateway or hands the answer to the next role. The answer's citation
markers are checked as they stream (`retrieval.citations.CitationCheck`): every number
the turn may cite was shown before it began, so the text clients receive is the checked
answer the store keeps. The gateway's results come
back as a `ToolResults` payload, which this role appends to its own thread as TOOL
messages (data, never instructions), counting the round trip. After ``max_tool_hops``
round trips a further tool request ends the run with a fixed "I don't know" answer
(``tool_loop_exhausted``). The tools the client declared for the run are offered too;
when the gateway leaves calls of them to the client (``client_pending``) the run pauses at
the ``client_tool`` gate until the client sends their results (`agents.gates`). A draft
that is not an answer (a tool's payload or error echoed, the prompt's words, a runaway
repetition: `agents.answer_guard`) is superseded by one sentence saying what could not be
done and why. A run whose answer must be a JSON document (``answer_schema``) asks the
model for one under that schema, and its text is left as the model wrote it (`Verbatim`:
a ``[1]`` in a document is data, not a citation).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from agents import answer_guard, gates, graph, model_input, prompts
from agents.deps import AgentDeps, tenant_tools
from agents.llm import local_prompts
from agents.llm.ports import ReasoningDelta, TextDelta, Usage
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
from agents.streaming import TokenBatcher
from bus.commands import AgentTask, Command, ToolCallBatch, ToolResults
from bus.events import Answer, ClientEvent, DraftSuperseded
from bus.run_state import ChatMessage, DraftCitations, RunState, ToolCall
from bus.runtime.context import StepContext, StepResult
from bus.runtime.worker import Handler
from retrieval.attribution import attribute
from retrieval.citations import (
    CitationCheck,
    RetrievedChunk,
    evidence_refs,
    refs_end,
    retrieved_refs,
)

AGENT = "researcher"


class Verbatim(CitationCheck):
    """The citation check of a JSON answer: its text passes as the model wrote it."""

    def __init__(self) -> None:
        super().__init__({})

    def feed(self, text: str) -> str:
        """The piece as it came."""
        return text

    def finish(self) -> str:
        """Nothing is ever held back."""
        return ""


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
        prompt = model_input.research_messages(state)
        tools = offered_tools(await tenant_tools(deps, command.tenant_id), state.settings)
        batcher = TokenBatcher(ctx, AGENT, attempt=state.attempts)
        # Every number the answer may cite is known now: check markers as they stream, so
        # what clients receive is the checked answer (held back only from "[" to its "]").
        schema = state.settings.answer_schema
        check = CitationCheck(run_refs(state)) if schema is None else Verbatim()
        guard = answer_guard.RepeatGuard()
        text: list[str] = []
        calls: list[ToolCall] = []
        usage: Usage | None = None
        first_at = 0.0
        think = state.settings.think
        cap = answer_guard.turn_tokens(think)
        options = llm_options(
            state.settings,
            AGENT,
            think=think,
            response_schema=schema,
            max_tokens=cap,
            require_tool=state.settings.client_tool_required and bool(tools),
        )
        stream = deps.llm.stream(prompt, tools, options)
        async for event in stream:
            if isinstance(event, ReasoningDelta):
                await batcher.add("reasoning", event.text)
            elif isinstance(event, TextDelta):
                if not first_at:
                    first_at = time.time()
                shown = check.feed(event.text)
                text.append(shown)
                await batcher.add("answer", shown)
                if guard.feed(shown):  # a runaway: stop the model, not at its token cap
                    await _close(stream)
                    calls = []
                    break
            elif isinstance(event, ToolCall):
                calls.append(event)
            else:
                usage = event
            if batcher.cancelled:
                return StepResult.ending(command, "cancelled", "cancelled while answering")
        rest = check.finish()
        final = not (calls and tools)  # the turn's text is the answer: is it one?
        whole = "".join(text) + rest
        rejection = _rejection(whole, history, prompt, guard, schema) if final else None
        # A prose answer that cites nothing cites the passage it rests on.
        if final and rejection is None and not check.citations and schema is None:
            rest += sourced(whole, state.question, check)
        text.append(rest)
        await batcher.add("answer", rest)
        tail = batcher.drain()  # written with the commit
        answer = "".join(text)
        spent = add_usage(state.usage, usage, AGENT)
        if rejection is None:
            tally = (state.draft_citations or DraftCitations()).plus(
                [c.ref for c in check.citations], check.stripped
            )
            state = state.evolve(draft_citations=tally)
        if not final:
            if state.tool_hops >= state.settings.max_tool_hops:
                result = _exhausted(command, state, spent, answer)
            else:
                result = _to_gateway(command, state, history, answer, calls, spent)
            return dataclasses.replace(result, events=[*tail, *result.events])
        state = state.evolve(usage=spent)
        if first_at and not state.first_token_at:  # the run's first answer token
            first_answer_token(state, first_at)
            state = state.evolve(first_token_at=first_at)
        result = _answered(command, state, history, answer, rejection)
        return dataclasses.replace(result, events=[*tail, *result.events])

    return handle


def _answered(
    command: Command,
    state: RunState,
    history: list[ChatMessage],
    answer: str,
    rejection: answer_guard.Rejection | None,
) -> StepResult:
    """The answer goes to the next role; a draft that is no answer is superseded first by
    the words that replace it (`_superseding`), which alone become the draft."""
    events: list[ClientEvent] = []
    draft = streamed_so_far(state) + answer
    if rejection is not None:
        answer, events = _superseding(command, state, rejection)
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


def sourced(answer: str, question: str, check: CitationCheck) -> str:
    """The marker to append to an answer that cites nothing but rests on a passage it was
    shown (`retrieval.attribution`), or "". Not after code: a closing fence takes no text."""
    if not answer.strip() or "```" in answer:
        return ""
    ref = attribute(answer, question, check.shown)
    if ref is None:
        return ""
    return ("" if answer[-1].isspace() else " ") + check.cite(ref)


def _rejection(
    answer: str,
    thread: list[ChatMessage],
    prompt: list[ChatMessage],
    guard: answer_guard.RepeatGuard,
    schema: dict[str, Any] | None,
) -> answer_guard.Rejection | None:
    """Why the turn's text is not an answer (`agents.answer_guard`), or None. A JSON answer
    is judged by its schema (at the edge), not by whether it looks like a tool's data."""
    if guard.look() and guard.unit is not None:
        failure = next((o for o in answer_guard.last_round(thread) if o.failed), None)
        return answer_guard.runaway(guard.unit, failure)
    if schema is not None:
        return None
    told = [m.content for m in prompt[:1] if m.role == "system"]  # the persona, not data
    asked = next((m.content for m in reversed(thread) if m.role == "user"), "")
    return answer_guard.rejected(answer, thread, told, local_prompts.EXAMPLES, asked)


def _superseding(
    command: Command, state: RunState, rejection: answer_guard.Rejection
) -> tuple[str, list[ClientEvent]]:
    """The answer that replaces a rejected draft, and the events that show it: the draft
    superseded (clients drop the answer shown so far), then the answer."""
    check = CitationCheck(run_refs(state))  # checked like any streamed text
    answer = check.feed(rejection.replacement) + check.finish()
    run, step, attempt = command.run_id, command.step_id, state.attempts
    return answer, [
        DraftSuperseded(
            run_id=run, step_id=step, agent=AGENT, attempt=attempt, reason=rejection.reason
        ),
        Answer(run_id=run, step_id=step, agent=AGENT, delta=answer, attempt=attempt),
    ]


async def _close(stream: object) -> None:
    """Stop a model's stream the turn will read no further (its generation ends)."""
    close = getattr(stream, "aclose", None)
    if close is not None:
        await close()


def run_refs(state: RunState) -> dict[int, RetrievedChunk]:
    """Every citation number the run has shown the researcher (unique in the run)."""
    return {**evidence_refs(state.evidence), **retrieved_refs(state.messages)}


def streamed_so_far(state: RunState) -> str:
    """The answer text this attempt's earlier turns streamed (text beside tool calls).

    It was shown to clients as answer text, so it stays part of the draft: what is
    stored is what was streamed.
    """
    turns = state.messages[state.base_len :]
    return "".join(m.content for m in turns if m.role == "assistant")


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
