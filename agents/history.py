"""A conversation's history as a model call reads it: a summary, then the recent turns.

The intake loads the branch a question continues: its newest summary and the messages
after it (`bus.store.SummaryStore.branch`). When they would outgrow the history's share of
the model's context window (`agents.context_budget`), or hold more than the recent
messages kept whole, the oldest whole turns are folded into a new summary: one tool-free
model call per group of messages that fits the summarizer's own window, each result stored
through its last message (insert-if-absent), the next group folded into it. Later turns
start from the stored summary, so a conversation costs the same per turn however long it
grows, and a redelivered step finds the summary its first delivery stored and folds
nothing again. Two deliveries of one step that overlap (a reclaim while the first still
runs) fold one after the other under a per-conversation lock, so the second reads what the
first stored and both give the model the same history.

Only questions and answers are in the history: an earlier turn's tool calls and results
never are (the answer carries what the model took from them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime

from agents import context_budget, prompts
from agents.budget import numbered_apart
from agents.deps import FaultPoint, no_fault
from agents.llm.ports import LLM, ChatMessage, LLMOptions, TextDelta
from bus.store import MessageRecord, MessageRole, Scope, SummaryRecord, SummaryStore
from bus.store.turn_types import INTERRUPTED

SUMMARIZER_PROMPT_TOKENS = 200
"""The summarizer's instructions and framing, estimated (its prompt is about 90 words)."""

WALK = 200
"""Messages after the newest summary the intake reads at most. Only a conversation older
than summaries has more: its last ``WALK`` messages are folded on its next turn and older
ones stay out of the model's history, as they were before."""


@dataclass(frozen=True, slots=True)
class History:
    """What a model call gets of the conversation: the summary, then the messages after it."""

    summary: SummaryRecord | None
    messages: list[MessageRecord]

    def chat(self) -> list[ChatMessage]:
        """The history as chat messages: the summary as a system note, then the turns."""
        turns = [
            ChatMessage.user(m.content)
            if m.role == MessageRole.USER
            else ChatMessage.assistant(said(m))
            for m in self.messages
        ]
        if self.summary is None:
            return turns
        return [ChatMessage.system(prompts.SUMMARY.format(summary=self.summary.content)), *turns]


def said(message: MessageRecord) -> str:
    """A message as the model reads it: a partial answer says it was cut short."""
    if message.status != INTERRUPTED:
        return message.content
    return f"{message.content}\n\n{prompts.INTERRUPTED_ANSWER}"


@dataclass(frozen=True, slots=True)
class Folding:
    """What folding needs: the model and its options, the store, the window, the limits.

    Attributes:
        llm: the model that writes the summary.
        options: its call options (the run's model for the intake, a short answer).
        summaries: where summaries are stored.
        window: the model's context window in tokens.
        max_messages: recent messages kept whole at most.
        now: the time the summarizer's prompt is dated with.
        fault: the test seam, called as ``after_summary`` once a summary is stored.
        serialize: the lock a fold of this conversation runs under; none by default.
    """

    llm: LLM
    options: LLMOptions
    summaries: SummaryStore
    window: int
    max_messages: int
    now: datetime
    fault: FaultPoint = no_fault
    serialize: Callable[[], AbstractAsyncContextManager[object]] = nullcontext


async def load(
    folding: Folding,
    owner: Scope,
    conversation_id: str,
    leaf: int,
    *,
    fixed_tokens: int,
    run_id: str,
) -> History:
    """The branch ending at ``leaf`` as the next model call reads it, folded to fit.

    Args:
        folding: the model, store and limits.
        owner: the conversation's owner (the run's user).
        conversation_id: the conversation.
        leaf: the branch's last message (the one the question follows).
        fixed_tokens: the call's other parts, estimated (system prompt, tools, question).
        run_id: the run folding (recorded with a summary it writes).
    """
    planned = await _plan(folding, owner, conversation_id, leaf, fixed_tokens)
    if planned.fold == 0:
        return planned.history
    async with folding.serialize():
        # A delivery that overlapped this one may have folded while this one waited.
        planned = await _plan(folding, owner, conversation_id, leaf, fixed_tokens)
        if planned.fold == 0:
            return planned.history
        return await _fold_history(folding, owner, conversation_id, planned, run_id)


@dataclass(frozen=True, slots=True)
class _Planned:
    history: History
    fold: int


async def _plan(
    folding: Folding, owner: Scope, conversation_id: str, leaf: int, fixed_tokens: int
) -> _Planned:
    """The branch as stored now, and how many of its oldest messages to fold."""
    branch = await folding.summaries.branch(owner, conversation_id, leaf, limit=WALK)
    summary, messages = branch.summary, branch.messages
    budget = context_budget.history_budget(folding.window, fixed_tokens)
    fold = context_budget.plan_fold(
        [context_budget.estimate_tokens(said(m)) for m in messages],
        [m.role == MessageRole.USER for m in messages],
        summary_tokens=0 if summary is None else context_budget.estimate_tokens(summary.content),
        budget=budget,
        max_messages=folding.max_messages,
    )
    return _Planned(History(summary, messages), fold)


async def _fold_history(
    folding: Folding, owner: Scope, conversation_id: str, planned: _Planned, run_id: str
) -> History:
    summary, messages, fold = planned.history.summary, planned.history.messages, planned.fold
    folded, kept = messages[:fold], messages[fold:]
    # Calls a redelivery skips (it finds their summaries stored): numbered apart, so the
    # step's other calls keep their budget call ids.
    with numbered_apart("s"):
        summary = await _fold(folding, owner, conversation_id, summary, folded, run_id)
        # Tests only: die with the summary stored, the step not committed.
        folding.fault("after_summary")
    return History(summary, kept)


async def _fold(
    folding: Folding,
    owner: Scope,
    conversation_id: str,
    summary: SummaryRecord | None,
    folded: Sequence[MessageRecord],
    run_id: str,
) -> SummaryRecord:
    room = _input_room(folding.window)
    sizes = [context_budget.estimate_tokens(said(m)) for m in folded]
    covered = 0 if summary is None else summary.messages
    start = 0
    starts = [m.role == MessageRole.USER for m in folded]
    for end in context_budget.chunks(sizes, starts, room):
        group = folded[start:end]
        text = await summarize(
            folding.llm,
            None if summary is None else summary.content,
            group,
            folding.options,
            room,
            folding.now,
        )
        covered += len(group)
        summary = await folding.summaries.put(
            owner, conversation_id, group[-1].id, text, messages=covered, run_id=run_id
        )
        start = end
    assert summary is not None  # folded is never empty
    return summary


def _input_room(window: int) -> int:
    """Tokens of messages one summarizer call reads: half of what its window leaves."""
    spare = window - SUMMARIZER_PROMPT_TOKENS - 2 * context_budget.SUMMARY_TOKENS
    return max(256, spare // 2)


async def summarize(
    llm: LLM,
    summary: str | None,
    messages: Sequence[MessageRecord],
    options: LLMOptions,
    room: int,
    now: datetime,
) -> str:
    """One tool-free model call folding ``messages`` into ``summary``.

    A message bigger than ``room`` is clipped for this call only (its start and its end).
    An empty reply keeps the old summary with the messages' questions appended, so a fold
    never loses what the user asked.
    """
    lines = [
        f"{'User' if m.role == MessageRole.USER else 'Assistant'}: "
        + context_budget.clip(said(m), room)
        for m in messages
    ]
    request = [
        ChatMessage.system(prompts.dated(prompts.SUMMARIZE, now)),
        ChatMessage.user(
            prompts.SUMMARIZE_INPUT.format(summary=summary or "(none)", messages="\n".join(lines))
        ),
    ]
    parts = [e.text async for e in llm.stream(request, (), options) if isinstance(e, TextDelta)]
    text = "".join(parts).strip()
    if text:
        return text
    asked = " ".join(m.content for m in messages if m.role == MessageRole.USER)
    kept = " ".join(p for p in (summary, asked) if p).strip() or "(nothing to summarize)"
    return context_budget.clip(kept, context_budget.SUMMARY_TOKENS)
