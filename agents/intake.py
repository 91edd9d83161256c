"""Intake: admit a run, persist it, contextualize a follow-up, route it by mode."""

from __future__ import annotations

from datetime import datetime

from agents import graph, prompts
from agents.deps import AgentDeps
from agents.llm.ports import LLM, ChatMessage, LLMOptions, TextDelta
from agents.sources import fan_out
from agents.state import llm_options
from bus import tracing
from bus.commands import AgentTask, Command
from bus.events import ClientEvent, Interpreted, RunStarted
from bus.runtime.context import StepContext, StepResult
from bus.runtime.worker import Handler
from bus.store import ConversationNotFound, MessageRecord, RunRecord, RunStatus, Scope
from bus.store.turns import INTERRUPTED

AGENT = "intake"


async def contextualize(
    llm: LLM, history: list[ChatMessage], question: str, options: LLMOptions, now: datetime
) -> str:
    """One tool-free model call rewriting a follow-up into a standalone request."""
    request = [
        ChatMessage.system(prompts.dated(prompts.CONTEXTUALIZE, now)),
        *history,
        ChatMessage.user(question),
    ]
    parts = [e.text async for e in llm.stream(request, (), options) if isinstance(e, TextDelta)]
    return "".join(parts).strip() or question


def _chat(history: list[MessageRecord]) -> list[ChatMessage]:
    return [
        ChatMessage.user(m.content) if m.role == "user" else ChatMessage.assistant(_said(m))
        for m in history
    ]


def _said(message: MessageRecord) -> str:
    """An answer as the model reads it: a partial one says it was cut short."""
    if message.status != INTERRUPTED:
        return message.content
    return f"{message.content}\n\n{prompts.INTERRUPTED_ANSWER}"


def make_intake(deps: AgentDeps) -> Handler:
    """The intake role's handler."""

    async def handle(ctx: StepContext, command: Command) -> StepResult:
        task = command.payload
        if not isinstance(task, AgentTask):
            raise TypeError(f"intake got a {task.kind} payload")
        state = task.state
        with tracing.store_span("runs.create"):
            stored, _ = await deps.runs.create_if_absent(
                RunRecord(
                    id=command.run_id,
                    tenant_id=command.tenant_id,
                    subject=command.subject,
                    status=RunStatus.RUNNING,
                    mode=state.settings.mode,
                    question=state.question,
                    conversation_id=state.conversation_id,
                )
            )
            if stored.status == RunStatus.QUEUED:  # it waited its turn in the conversation
                owner = Scope.user(command.tenant_id, command.subject)
                await deps.runs.set_status(owner, command.run_id, RunStatus.RUNNING)
        history: list[ChatMessage] = []
        parent = state.parent_message_id
        if state.conversation_id:
            # The conversation is the caller's: admission refused anyone else's id, and a
            # race that lost it since still ends the run here, with nothing written to it.
            owner = Scope.user(command.tenant_id, command.subject)
            try:
                found = await deps.conversations.ensure(
                    owner, state.conversation_id, state.question
                )
            except ConversationNotFound:
                return StepResult.ending(command, "error", "no such conversation")
            # The branch the question continues: the one it names (an edit or a
            # regenerate), else the active one as it is now (after any run it waited for).
            parent = found.active_message_id if parent is None else parent
            if parent:
                records = await deps.conversations.history(
                    owner, state.conversation_id, limit=deps.history_turns, leaf=parent
                )
                history = _chat(records)
        # Built after the store writes, so its timestamp is when clients can see it.
        started = RunStarted(
            run_id=command.run_id,
            step_id=command.step_id,
            agent=AGENT,
            question=state.question,
            mode=state.settings.mode,
            conversation_id=state.conversation_id,
        )
        settings = state.settings
        persona = prompts.for_agent("researcher", settings.agent_prompts, settings.mode)
        chat = [ChatMessage.system(prompts.researcher_system(deps.clock(), persona))]
        interpreted = None
        events: list[ClientEvent] = [started]
        if history:
            # Contextualizing costs a model call: show the run has started before it.
            await ctx.emit(started)
            events = []
            options = llm_options(settings, AGENT, max_tokens=200)
            interpreted = await contextualize(
                deps.llm, history, state.question, options, deps.clock()
            )
            events.append(
                Interpreted(
                    run_id=command.run_id, step_id=command.step_id, agent=AGENT, text=interpreted
                )
            )
            chat += [
                *history,
                ChatMessage.system(prompts.INTERPRETED.format(interpreted=interpreted)),
            ]
        chat.append(ChatMessage.user(state.question))
        new_state = state.evolve(
            messages=chat,
            interpreted=interpreted,
            base_len=len(chat),
            parent_message_id=parent or 0,
        )
        target = graph.next_role(state.settings, "intake", "admitted")
        if graph.next_node(state.settings, "intake", "admitted") == "gather":
            # Single mode's context: the sources are searched before the researcher's first call.
            return StepResult(next=fan_out(command, new_state, "evidence", target), events=events)
        return StepResult(next=[command.follow(target, AgentTask(state=new_state))], events=events)

    return handle
