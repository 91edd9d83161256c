"""Intake: admit a run, persist it, contextualize a follow-up, route it by mode."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from datetime import datetime

from redis.exceptions import LockError

from agents import context_budget, graph, history, prompts
from agents.deps import AgentDeps, tenant_tools
from agents.llm.ports import LLM, ChatMessage, LLMOptions, TextDelta
from agents.sources import fan_out
from agents.state import llm_options
from bus import keys, tracing
from bus.commands import AgentTask, Command
from bus.events import ClientEvent, Interpreted, RunStarted
from bus.run_state import RunState
from bus.runtime.context import StepContext, StepResult
from bus.runtime.worker import Handler
from bus.store import ConversationNotFound, RunRecord, RunStatus, Scope

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


FOLD_LOCK_S = 120
"""How long a fold holds its conversation's lock at most (a worker killed holding it), and
how long an overlapping delivery waits for it before it folds unlocked."""


async def _history(
    ctx: StepContext, deps: AgentDeps, command: Command, state: RunState, system: str, parent: int
) -> list[ChatMessage]:
    """The branch ending at ``parent`` as the model reads it: a summary and recent turns,
    folded to fit the model's window (the last ``history_turns`` messages without a
    summary store)."""
    owner = Scope.user(command.tenant_id, command.subject)
    conversation_id = state.conversation_id
    assert conversation_id is not None
    if deps.summaries is None:
        records = await deps.conversations.history(
            owner, conversation_id, limit=deps.history_turns, leaf=parent
        )
        return history.History(None, records).chat()
    tools = await tenant_tools(deps, command.tenant_id)
    estimate = context_budget.estimate_tokens
    # The question twice: as asked, and as the contextualizer rewrites it.
    fixed = estimate(system) + 2 * estimate(state.question)
    fixed += sum(estimate(t.model_dump_json()) for t in tools)
    folding = history.Folding(
        llm=deps.llm,
        options=llm_options(state.settings, AGENT, max_tokens=context_budget.SUMMARY_TOKENS),
        summaries=deps.summaries,
        window=deps.context_window,
        max_messages=deps.history_turns,
        now=deps.clock(),
        fault=deps.fault,
        serialize=lambda: _fold_lock(ctx, command.tenant_id, conversation_id),
    )
    with tracing.store_span("conversation.history"):
        loaded = await history.load(
            folding, owner, conversation_id, parent, fixed_tokens=fixed, run_id=command.run_id
        )
    return loaded.chat()


@asynccontextmanager
async def _fold_lock(
    ctx: StepContext, tenant_id: str, conversation_id: str
) -> AsyncGenerator[None]:
    """The conversation's fold lock (redis-py's token lock); waited for at most
    ``FOLD_LOCK_S``, after which the fold goes ahead unlocked rather than fail the run."""
    lock = ctx.redis.lock(
        keys.conversation_fold(tenant_id, conversation_id),
        timeout=FOLD_LOCK_S,
        blocking_timeout=FOLD_LOCK_S,
    )
    held = await lock.acquire()
    try:
        yield
    finally:
        if held:
            with contextlib.suppress(LockError):  # it expired: another fold may hold it now
                await lock.release()


def make_intake(deps: AgentDeps) -> Handler:
    """The intake role's handler."""

    async def handle(ctx: StepContext, command: Command) -> StepResult:
        task = command.payload
        if not isinstance(task, AgentTask):
            raise TypeError(f"intake got a {task.kind} payload")
        state = task.state
        fence = deps.fence
        if fence and await fence.holds(
            ctx.redis, command.tenant_id, command.subject, command.shard
        ):
            return StepResult()  # its user is being erased: nothing starts (the commit acks)
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
        system = prompts.researcher_system(deps.clock(), persona)
        chat = [ChatMessage.system(system)]
        interpreted = None
        events: list[ClientEvent] = [started]
        past: list[ChatMessage] = []
        if state.conversation_id and parent:
            # A follow-up may cost model calls (a summary, the rewrite): show the run has
            # started before them.
            await ctx.emit(started)
            events = []
            past = await _history(ctx, deps, command, state, system, parent)
        if past:
            options = llm_options(settings, AGENT, max_tokens=200)
            interpreted = await contextualize(deps.llm, past, state.question, options, deps.clock())
            events.append(
                Interpreted(
                    run_id=command.run_id, step_id=command.step_id, agent=AGENT, text=interpreted
                )
            )
            chat += [
                *past,
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
