"""Conversations longer than the model's window, through the real roles and a real store.

The older turns of a long conversation are folded into a stored summary; the next turn's
model call gets that summary and the turns after it, whole. A redelivered intake finds the
summary its first delivery stored and writes no other; a branch that left the conversation
before the summarized message never sees that summary.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from redis.asyncio import Redis

from agents import prompts
from agents.history import said
from agents.llm.ports import ChatMessage, LLMEvent, LLMOptions, ToolDefinition
from agents.llm.scripted import ScriptedLLM, summary_of, text, turn
from api.compose.roles import Roles
from api.compose.settings import AppSettings
from bus import keys
from bus.commands import AgentTask, Command, RunSettings, RunState, deadline_in, new_run_id
from bus.runtime.context import StepContext, StepResult
from bus.store import ConversationStore, MessageRole, Scope, open_store
from tests.integration.agents.events import final
from tests.integration.agents.system import StartSystem

ALICE = Scope.user("t1", "alice")
WINDOW: dict[str, Any] = {"llm_context_tokens": 2048}
SUMMARY_PREFIX = prompts.SUMMARY.split("{", 1)[0]


#: A long answer's body: distinct words (one letter 300 times is a runaway the researcher
#: stops: `agents.checks.answer_guard`).
DETAILS = " ".join(f"detail{j}" for j in range(38))


def question(i: int) -> str:
    """A question stating a fact, long enough that a few turns outgrow the budget."""
    return f"Fact {i}: my number is {1000 + i}." + " filler" * 80


class Conversationalist:
    """A scripted model for long conversations: a long answer to each question, the
    question itself as its rewrite, and numbered summaries (a second summary of the same
    turns would differ from the first)."""

    def __init__(self) -> None:
        self.summaries = 0

    def __call__(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ) -> list[LLMEvent]:
        first = messages[0].content
        asked = [m.content for m in messages if m.role == "user"][-1]
        if first.startswith(prompts.SUMMARIZE):
            self.summaries += 1
            return turn(text(f"summary {self.summaries}: {summary_of(asked)}"))
        if first.startswith(prompts.CONTEXTUALIZE):
            return turn(text(asked))
        return turn(text(f"Noted {asked[:14]}. " + DETAILS))


def researcher_calls(llm: ScriptedLLM) -> list[tuple[ChatMessage, ...]]:
    """The researcher's requests (not the summarizer's or the contextualizer's)."""
    return [m for m, _, _ in llm.requests if m[0].content.startswith(prompts.RESEARCHER)]


def summarizer_inputs(llm: ScriptedLLM) -> list[str]:
    return [m[-1].content for m, _, _ in llm.requests if m[0].content.startswith(prompts.SUMMARIZE)]


async def test_a_long_conversation_is_folded_and_the_next_turn_reads_summary_and_recent_turns(
    start_system: StartSystem,
) -> None:
    llm = ScriptedLLM(Conversationalist())
    system = await start_system(llm, **WINDOW)
    for i in range(8):
        events = await system.ask(question(i), conversation_id="long")
        assert final(events).status == "done"

    assert system.stores.summaries is not None
    summaries = await system.stores.summaries.list(ALICE, "long")
    history = await system.stores.conversations.history(ALICE, "long", limit=100)
    assert len(history) == 16 and summaries
    newest = summaries[-1]
    # The last run's model call: the newest summary, then every message after it (the
    # last run's own question and answer were appended after the call).
    request = researcher_calls(llm)[-1]
    recent = [m for m in history[:-2] if m.id > newest.through_message_id]
    assert request[1] == ChatMessage.system(prompts.SUMMARY.format(summary=newest.content))
    assert [(m.role, m.content) for m in request[2:-2]] == [(m.role.value, said(m)) for m in recent]
    assert request[-1] == ChatMessage.user(question(7))
    assert recent and recent[0].role == MessageRole.USER  # whole turns, never half of one
    # Nothing the summary covers is carried whole any more.
    covered = [m.content for m in history if m.id <= newest.through_message_id]
    assert not any(c in m.content for c in covered for m in request)
    # Each refresh folded the summary before it: the first fact is still in the newest.
    inputs = summarizer_inputs(llm)
    for older in summaries[:-1]:
        assert any(i.startswith(f"Summary so far:\n{older.content}\n") for i in inputs)
    assert "1000" in newest.content
    assert newest.messages == sum(1 for m in history if m.id <= newest.through_message_id)


async def seed(conversations: ConversationStore, cid: str, turns: int) -> list[int]:
    """A conversation of ``turns`` long turns written straight to the store; message ids."""
    await conversations.ensure(ALICE, cid, question(0))
    ids: list[int] = []
    for i in range(turns):
        run = f"seed-{cid}-{i}"
        ids.append(await conversations.append(ALICE, cid, MessageRole.USER, question(i), run))
        answer = f"Noted fact {i}. " + "y" * 300
        ids.append(await conversations.append(ALICE, cid, MessageRole.ASSISTANT, answer, run))
    return ids


def intake_step(cid: str, asked: str, parent: int | None = None) -> Command:
    return Command(
        run_id=new_run_id(),
        tenant_id="t1",
        subject="alice",
        role=keys.Role.INTAKE,
        deadline=deadline_in(60),
        payload=AgentTask(
            state=RunState(
                question=asked,
                conversation_id=cid,
                parent_message_id=parent,
                settings=RunSettings(),
            )
        ),
    )


def thread(result: StepResult) -> list[ChatMessage]:
    """The researcher's thread an intake step publishes."""
    [follow] = result.next
    assert isinstance(follow.payload, AgentTask)
    return follow.payload.state.messages


def summary_notes(messages: Sequence[ChatMessage]) -> list[str]:
    return [m.content for m in messages if m.content.startswith(SUMMARY_PREFIX)]


async def test_a_redelivered_intake_writes_no_second_summary_and_reads_the_first(
    real_redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    s = make_settings(**WINDOW)
    model = Conversationalist()
    llm = ScriptedLLM(model)
    async with open_store(s.bus, migrate=True) as stores:
        assert stores.summaries is not None
        await seed(stores.conversations, "c", turns=6)
        handler = Roles(s, stores, llm=llm).handler(keys.Role.INTAKE)
        command = intake_step("c", question(6))

        first = await handler(StepContext(command, 1, real_redis, s.bus), command)
        stored = await stores.summaries.list(ALICE, "c")
        calls = model.summaries
        # The worker died before the commit: the same entry is delivered again.
        again = await handler(StepContext(command, 2, real_redis, s.bus), command)

        assert stored and calls == len(stored)
        assert await stores.summaries.list(ALICE, "c") == stored
        assert model.summaries == calls  # the summary was read back, not written again
    assert thread(again) == thread(first)
    assert summary_notes(thread(first)) == [prompts.SUMMARY.format(summary=stored[-1].content)]


async def test_overlapping_deliveries_of_one_intake_keep_one_summary_and_agree_on_it(
    real_redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    s = make_settings(**WINDOW)
    model = Conversationalist()
    async with open_store(s.bus, migrate=True) as stores:
        assert stores.summaries is not None
        await seed(stores.conversations, "c", turns=6)
        handler = Roles(s, stores, llm=ScriptedLLM(model)).handler(keys.Role.INTAKE)
        command = intake_step("c", question(6))

        # A reclaim that overlapped a step still running: both fold the same turns.
        one, two = await asyncio.gather(
            handler(StepContext(command, 1, real_redis, s.bus), command),
            handler(StepContext(command, 2, real_redis, s.bus), command),
        )

        stored = await stores.summaries.list(ALICE, "c")
    assert len({r.through_message_id for r in stored}) == len(stored)
    assert thread(one) == thread(two)
    assert summary_notes(thread(one)) == [prompts.SUMMARY.format(summary=stored[-1].content)]


async def test_a_branch_from_before_the_summarized_message_does_not_see_its_summary(
    real_redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    s = make_settings(**WINDOW)
    llm = ScriptedLLM(Conversationalist())
    async with open_store(s.bus, migrate=True) as stores:
        assert stores.summaries is not None
        ids = await seed(stores.conversations, "c", turns=6)
        handler = Roles(s, stores, llm=llm).handler(keys.Role.INTAKE)
        folded = intake_step("c", question(6))
        await handler(StepContext(folded, 1, real_redis, s.bus), folded)
        [*_, newest] = await stores.summaries.list(ALICE, "c")
        assert newest.through_message_id > ids[1]

        # An edit of the second question: the branch leaves after the first answer.
        early = intake_step("c", "Fact 1, edited: my number is 7.", parent=ids[1])
        early_thread = thread(await handler(StepContext(early, 1, real_redis, s.bus), early))
        # A regenerate of the last answer: the branch goes through the summarized message.
        late = intake_step("c", question(5), parent=ids[-3])
        late_thread = thread(await handler(StepContext(late, 1, real_redis, s.bus), late))

    assert summary_notes(early_thread) == []
    assert [m.content for m in early_thread if m.role == "user"] == [
        question(0),
        "Fact 1, edited: my number is 7.",
    ]
    assert summary_notes(late_thread) == [prompts.SUMMARY.format(summary=newest.content)]
