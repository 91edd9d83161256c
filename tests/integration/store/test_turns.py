"""TurnStore conformance on SQLite and Postgres: one run at a time per conversation.

Admission decides under the conversation's lock; the run's end promotes the oldest
waiting question; every repeat is a no-op; another user's conversation id stays unknown.
"""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from bus.events import RunStatus
from bus.run_state import Multitask
from bus.store import (
    ConversationNotFound,
    ConversationStore,
    Exchange,
    MessageRole,
    RunRecord,
    RunStore,
    Scope,
)
from bus.store.engine import make_engine
from bus.store.turn_types import ConversationBusy, TurnState
from bus.store.turns import TurnStore

ALICE = Scope.user("tenant-a", "alice")
BOB = Scope.user("tenant-a", "bob")


@pytest.fixture
def turns(engine: AsyncEngine) -> TurnStore:
    return TurnStore(engine)


async def admit(turns: TurnStore, run_id: str, policy: Multitask = "enqueue", owner: Scope = ALICE):  # type: ignore[no-untyped-def]
    return await turns.admit(
        owner,
        "conv-1",
        run_id,
        f"question of {run_id}",
        publish=f'{{"run": "{run_id}"}}',
        timeout_s=60,
        policy=policy,
        mode="single",
    )


async def count(engine: AsyncEngine, table: str) -> int:
    async with engine.connect() as conn:
        return (await conn.execute(text(f"SELECT count(*) FROM {table}"))).scalar_one()


async def test_the_first_runs_the_next_waits_and_the_end_promotes_it_in_order(
    turns: TurnStore, engine: AsyncEngine
) -> None:
    first = await admit(turns, "run-1")
    second = await admit(turns, "run-2")
    third = await admit(turns, "run-3")

    assert first.state == TurnState.RUNNING and first.cancel is None
    assert (second.state, second.ahead, third.state, third.ahead) == (
        TurnState.QUEUED,
        1,
        TurnState.QUEUED,
        2,
    )
    queued = await RunStore(engine).get(ALICE, "run-2")
    assert queued is not None and queued.status == RunStatus.QUEUED  # visible while waiting

    promoted = await turns.finish(ALICE, "run-1", RunStatus.DONE, None)
    assert promoted is not None and promoted.run_id == "run-2"
    assert promoted.running_until is not None and promoted.publish == '{"run": "run-2"}'
    # A repeat of the end (a redelivered last step) promotes nothing new: the same turn.
    again = await turns.finish(ALICE, "run-1", RunStatus.DONE, None)
    assert again is not None and again.run_id == "run-2"
    waiting = await turns.waiting(ALICE, "conv-1")
    assert [(t.run_id, t.state) for t in waiting] == [
        ("run-2", TurnState.RUNNING),
        ("run-3", TurnState.QUEUED),
    ]
    last = await turns.finish(ALICE, "run-2", RunStatus.DONE, None)
    assert last is not None and last.run_id == "run-3"
    assert await turns.finish(ALICE, "run-3", RunStatus.DONE, None) is None
    assert await turns.waiting(ALICE, "conv-1") == []


async def test_reject_writes_nothing_and_a_retry_of_an_admitted_run_changes_nothing(
    turns: TurnStore, engine: AsyncEngine
) -> None:
    await admit(turns, "run-1")
    before = (await count(engine, "conversation_turns"), await count(engine, "runs"))

    with pytest.raises(ConversationBusy):
        await admit(turns, "run-2", "reject")
    retry = await admit(turns, "run-1", "reject")

    assert (await count(engine, "conversation_turns"), await count(engine, "runs")) == before
    assert retry.replayed and retry.state == TurnState.RUNNING


async def test_interrupt_and_rollback_name_the_run_to_cancel(turns: TurnStore) -> None:
    await admit(turns, "run-1")

    interrupting = await admit(turns, "run-2", "interrupt")

    assert interrupting.state == TurnState.QUEUED and interrupting.cancel == "run-1"
    [running, _] = await turns.waiting(ALICE, "conv-1")
    assert running.disposition == "interrupt"


async def test_a_run_a_later_question_cancelled_says_which_policy_did_to_its_owner_only(
    turns: TurnStore,
) -> None:
    await admit(turns, "run-1")
    await admit(turns, "run-2", "interrupt")
    await turns.finish(ALICE, "run-1", RunStatus.CANCELLED, "half")
    await admit(turns, "run-3", "rollback")

    assert await turns.cancelled_by(ALICE, "run-1") == "interrupted"
    assert await turns.cancelled_by(ALICE, "run-2") == "rolled_back"
    assert await turns.cancelled_by(ALICE, "run-3") is None  # nothing cut it short
    assert await turns.cancelled_by(ALICE, "no-such-run") is None
    assert await turns.cancelled_by(BOB, "run-1") is None  # another user learns nothing


async def test_an_interrupted_run_leaves_its_partial_answer_marked_and_rollback_none(
    turns: TurnStore, engine: AsyncEngine
) -> None:
    conversations = ConversationStore(engine)
    await conversations.ensure(ALICE, "conv-1", "q")
    await admit(turns, "run-1")
    await admit(turns, "run-2", "interrupt")
    await turns.finish(ALICE, "run-1", RunStatus.CANCELLED, "half an ans")
    for role, content in ((MessageRole.USER, "q2"), (MessageRole.ASSISTANT, "a2")):
        await conversations.append(ALICE, "conv-1", role, content, "run-2")
    await admit(turns, "run-3", "rollback")
    await turns.finish(ALICE, "run-2", RunStatus.DONE, None)

    history = await conversations.history(ALICE, "conv-1")
    assert [(m.run_id, m.role, m.content, m.status) for m in history] == [
        ("run-1", "user", "question of run-1", None),
        ("run-1", "assistant", "half an ans", "interrupted"),
    ]  # run-2 ended done, but rollback removed it


async def test_another_users_conversation_id_is_not_found(turns: TurnStore) -> None:
    await admit(turns, "run-1")

    with pytest.raises(ConversationNotFound):
        await admit(turns, "run-2", owner=BOB)
    assert await turns.finish(BOB, "run-1", RunStatus.DONE, None) is None
    assert await turns.waiting(BOB, "conv-1") == []


async def test_a_running_turn_past_its_deadline_is_ended_by_the_sweeper(
    turns: TurnStore, superuser_engine: AsyncEngine
) -> None:
    await admit(turns, "run-1")
    await admit(turns, "run-2")
    async with superuser_engine.begin() as conn:
        await conn.execute(
            text("UPDATE conversation_turns SET running_until = 1 WHERE run_id = 'run-1'")
        )

    due = await turns.due(grace_s=0)

    assert [t.run_id for t in due] == ["run-2"]
    assert [t.run_id for t in await turns.waiting(ALICE, "conv-1")] == ["run-2"]


async def test_concurrent_admissions_from_two_engines_let_exactly_one_run(
    turns: TurnStore, store_url: str
) -> None:
    other = make_engine(store_url)  # a second API replica's connection pool
    try:
        replicas = [turns, TurnStore(other)]
        admissions = await asyncio.gather(*(admit(replicas[i % 2], f"run-{i}") for i in range(10)))
    finally:
        await other.dispose()

    running = [a for a in admissions if a.state == TurnState.RUNNING]
    assert len(running) == 1
    assert sorted(a.ahead for a in admissions if a.state == TurnState.QUEUED) == list(range(1, 10))


async def test_a_runs_end_ends_its_turn_and_names_the_next_in_the_same_transaction(
    turns: TurnStore, engine: AsyncEngine
) -> None:
    runs, conversations = RunStore(engine), ConversationStore(engine)
    await conversations.ensure(ALICE, "conv-1", "q")
    first = RunRecord(
        id="run-1", tenant_id="tenant-a", subject="alice", mode="single", question="q1"
    )
    await runs.create(first)
    for run_id in ("run-1", "run-2", "run-3"):
        await admit(turns, run_id)
    exchange = Exchange(conversation_id="conv-1", question="question of run-1", answer="a1")

    ended = await runs.end_answered(ALICE, "run-1", exchange, trace=[], usage={})
    # A redelivered end (the process died before it published run-2): the same turn again.
    again = await runs.end_answered(ALICE, "run-1", exchange, trace=[], usage={})

    assert ended.next is not None and ended.next.run_id == "run-2"
    assert ended.next.publish == '{"run": "run-2"}' and ended.next.running_until is not None
    assert again.next == ended.next and again.asked == ended.asked
    waiting = await turns.waiting(ALICE, "conv-1")
    assert [(t.run_id, t.state) for t in waiting] == [
        ("run-2", TurnState.RUNNING),
        ("run-3", TurnState.QUEUED),
    ]
    history = await conversations.history(ALICE, "conv-1")
    assert [(m.run_id, m.content) for m in history] == [
        ("run-1", "question of run-1"),
        ("run-1", "a1"),
    ]
    failed = await runs.end_turn(
        ALICE, "run-2", RunStatus.ERROR, "conv-1", answer=None, trace=[], usage=None
    )
    assert failed.next is not None and failed.next.run_id == "run-3"
    stored = await runs.get(ALICE, "run-2")
    assert stored is not None and stored.status == RunStatus.ERROR


async def test_an_end_that_fails_leaves_the_turn_running_and_the_next_waiting(
    turns: TurnStore, engine: AsyncEngine
) -> None:
    runs = RunStore(engine)
    await admit(turns, "run-1")
    await admit(turns, "run-2")
    gone = Exchange(conversation_id="conv-1", question="q", answer="a")  # no such conversation

    with pytest.raises(ConversationNotFound):
        await runs.end_answered(ALICE, "run-1", gone, trace=[], usage={})

    waiting = await turns.waiting(ALICE, "conv-1")
    assert [(t.run_id, t.state) for t in waiting] == [
        ("run-1", TurnState.RUNNING),
        ("run-2", TurnState.QUEUED),
    ]


async def test_an_interrupted_runs_end_keeps_its_partial_answer_with_its_turns_end(
    turns: TurnStore, engine: AsyncEngine
) -> None:
    runs, conversations = RunStore(engine), ConversationStore(engine)
    await conversations.ensure(ALICE, "conv-1", "q")
    await admit(turns, "run-1")
    await admit(turns, "run-2", "interrupt")

    ended = await runs.end_turn(
        ALICE, "run-1", RunStatus.CANCELLED, "conv-1", answer=None, trace=[], usage=None,
        error_code="interrupted", partial="half an ans",
    )  # fmt: skip

    assert ended.next is not None and ended.next.run_id == "run-2"
    history = await conversations.history(ALICE, "conv-1")
    assert [(m.run_id, m.content, m.status) for m in history] == [
        ("run-1", "question of run-1", None),
        ("run-1", "half an ans", "interrupted"),
    ]


async def test_the_end_of_a_conversations_first_run_kept_only_in_redis_names_no_turn(
    engine: AsyncEngine,
) -> None:
    runs, conversations = RunStore(engine), ConversationStore(engine)
    await conversations.ensure(ALICE, "conv-new", "q")
    exchange = Exchange(conversation_id="conv-new", question="q", answer="a")

    ended = await runs.end_answered(ALICE, "run-1", exchange, trace=[], usage={})

    assert ended.next is None and ended.asked is not None


async def test_a_runs_end_in_a_conversation_id_another_user_holds_leaves_their_turns(
    turns: TurnStore, engine: AsyncEngine
) -> None:
    runs = RunStore(engine)
    await admit(turns, "run-b", owner=BOB)
    await runs.create(
        RunRecord(id="run-a", tenant_id="tenant-a", subject="alice", mode="single", question="q")
    )

    ended = await runs.end_turn(
        ALICE, "run-a", RunStatus.ERROR, "conv-1", answer=None, trace=[], usage=None
    )

    assert ended.next is None
    stored = await runs.get(ALICE, "run-a")
    assert stored is not None and stored.status == RunStatus.ERROR
    assert [(t.run_id, t.state) for t in await turns.waiting(BOB, "conv-1")] == [
        ("run-b", TurnState.RUNNING)
    ]
