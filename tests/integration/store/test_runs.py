"""RunStore conformance: the same behaviour on SQLite and Postgres."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta, timezone

import pytest

from bus.errors import StoreError
from bus.store import (
    TERMINAL_STATUSES,
    ConversationNotFound,
    ConversationStore,
    Exchange,
    RunRecord,
    RunStatus,
    RunStore,
    Scope,
    make_engine,
)

T0 = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)
ALICE = Scope.user("tenant-a", "alice")
B_ALICE = Scope.user("tenant-b", "alice")


def a_run(run_id: str = "run-1", tenant_id: str = "tenant-a", **changes: object) -> RunRecord:
    fields: dict[str, object] = {
        "id": run_id,
        "tenant_id": tenant_id,
        "subject": "alice",
        "mode": "single",
        "question": "What is a consumer group?",
    }
    return RunRecord.model_validate(fields | changes)


async def test_create_then_get_returns_the_same_run(store: RunStore) -> None:
    run = a_run(created_at=T0, updated_at=T0)

    created = await store.create(run)

    assert created == run
    assert await store.get(ALICE, "run-1") == run


async def test_get_unknown_run_is_none(store: RunStore) -> None:
    assert await store.get(ALICE, "nope") is None


async def test_create_with_a_taken_id_raises_store_error(store: RunStore) -> None:
    await store.create(a_run())

    with pytest.raises(StoreError, match="already exists"):
        await store.create(a_run(tenant_id="tenant-b"))
    assert (await store.get(ALICE, "run-1")) is not None


async def test_a_tenant_cannot_read_another_tenants_run(store: RunStore) -> None:
    await store.create(a_run("run-b", tenant_id="tenant-b"))

    assert await store.get(ALICE, "run-b") is None
    assert await store.list(ALICE) == []
    assert [r.id for r in await store.list(B_ALICE)] == ["run-b"]


async def test_timestamps_come_back_aware_in_utc(store: RunStore) -> None:
    plus_two = timezone(timedelta(hours=2))
    await store.create(a_run(created_at=datetime(2025, 1, 1, 14, 0, tzinfo=plus_two)))

    got = await store.get(ALICE, "run-1")

    assert got is not None
    assert got.created_at == T0
    assert got.created_at.utcoffset() == timedelta(0)


async def test_running_then_done_records_answer_and_finish_time(store: RunStore) -> None:
    await store.create(a_run())

    running = await store.set_status(ALICE, "run-1", RunStatus.RUNNING)
    done = await store.set_status(ALICE, "run-1", RunStatus.DONE, answer="A named set of readers.")

    assert running is not None and running.status is RunStatus.RUNNING
    assert running.finished_at is None
    assert done is not None and done.status is RunStatus.DONE and done.is_terminal
    assert done.answer == "A named set of readers."
    assert done.finished_at is not None and done.finished_at >= done.created_at
    assert await store.get(ALICE, "run-1") == done


async def test_setting_the_same_terminal_status_twice_changes_nothing(store: RunStore) -> None:
    await store.create(a_run())
    first = await store.set_status(ALICE, "run-1", RunStatus.ERROR, error_code="llm_failed")

    second = await store.set_status(ALICE, "run-1", RunStatus.ERROR, error_code="other")

    assert second == first
    assert second is not None and second.error_code == "llm_failed"


@pytest.mark.parametrize("terminal", sorted(TERMINAL_STATUSES))
async def test_a_terminal_run_never_goes_back_to_running(
    store: RunStore, terminal: RunStatus
) -> None:
    await store.create(a_run())
    ended = await store.set_status(ALICE, "run-1", terminal)

    after = await store.set_status(ALICE, "run-1", RunStatus.RUNNING)

    assert after == ended
    assert after is not None and after.status is terminal


async def test_a_terminal_status_is_not_replaced_by_another(store: RunStore) -> None:
    await store.create(a_run())
    await store.set_status(ALICE, "run-1", RunStatus.CANCELLED)

    after = await store.set_status(ALICE, "run-1", RunStatus.DONE, answer="late answer")

    assert after is not None
    assert after.status is RunStatus.CANCELLED and after.answer is None


async def test_racing_terminal_updates_have_one_winner(store: RunStore) -> None:
    await store.create(a_run())

    results = await asyncio.gather(
        store.set_status(ALICE, "run-1", RunStatus.DONE, answer="yes"),
        store.set_status(ALICE, "run-1", RunStatus.TIMEOUT, error_code="deadline"),
    )

    stored = await store.get(ALICE, "run-1")
    assert stored is not None and stored.is_terminal
    assert list(results) == [stored, stored]
    if stored.status is RunStatus.DONE:
        assert (stored.answer, stored.error_code) == ("yes", None)
    else:
        assert (stored.answer, stored.error_code) == (None, "deadline")


async def test_a_suspended_run_resumes(store: RunStore) -> None:
    await store.create(a_run())
    suspended = await store.set_status(ALICE, "run-1", RunStatus.SUSPENDED)

    resumed = await store.set_status(ALICE, "run-1", RunStatus.RUNNING)

    assert suspended is not None and suspended.finished_at is None
    assert resumed is not None and resumed.status is RunStatus.RUNNING


async def test_set_status_keeps_the_answer_when_none_is_given(store: RunStore) -> None:
    await store.create(a_run())
    await store.set_status(ALICE, "run-1", RunStatus.SUSPENDED, answer="draft")

    after = await store.set_status(ALICE, "run-1", RunStatus.DONE)

    assert after is not None and after.answer == "draft"


async def test_set_status_of_an_unknown_run_is_none(store: RunStore) -> None:
    assert await store.set_status(ALICE, "nope", RunStatus.DONE) is None


async def test_list_pages_newest_first_without_gaps_or_repeats(store: RunStore) -> None:
    # Three runs share a timestamp, so paging must break ties on the id.
    times = [T0, T0 + timedelta(seconds=1), T0 + timedelta(seconds=1), T0 + timedelta(seconds=1)]
    times += [T0 + timedelta(minutes=5), T0 - timedelta(days=1)]
    for i, at in enumerate(times):
        await store.create(a_run(f"run-{i}", created_at=at, updated_at=at))
    await store.create(a_run("other", tenant_id="tenant-b", created_at=T0))

    pages: list[list[str]] = []
    before: str | None = None
    while page := await store.list(ALICE, limit=2, before=before):
        pages.append([r.id for r in page])
        before = page[-1].id

    assert pages == [["run-4", "run-3"], ["run-2", "run-1"], ["run-0", "run-5"]]
    assert [r.id for r in await store.list(ALICE, limit=3)] == ["run-4", "run-3", "run-2"]


async def test_list_with_another_tenants_cursor_is_empty(store: RunStore) -> None:
    await store.create(a_run("mine", created_at=T0))
    await store.create(a_run("theirs", tenant_id="tenant-b", created_at=T0 + timedelta(days=1)))

    assert await store.list(ALICE, before="theirs") == []


async def test_list_refuses_a_limit_below_one(store: RunStore) -> None:
    with pytest.raises(ValueError, match="limit"):
        await store.list(ALICE, limit=0)


async def test_an_unreachable_database_raises_store_error() -> None:
    # Port 1 on loopback refuses connections at once, so this needs no real server.
    engine = make_engine("postgresql+asyncpg://postgres@127.0.0.1:1/nowhere")
    try:
        with pytest.raises(StoreError, match=r"127\.0\.0\.1:1") as caught:
            await RunStore(engine).get(ALICE, "run-1")
    finally:
        await engine.dispose()
    assert isinstance(caught.value.__cause__, OSError)
    assert caught.value.code == "store_error"


def test_a_sync_driver_url_is_refused_with_a_hint() -> None:
    with pytest.raises(StoreError, match="sqlite\\+aiosqlite"):
        make_engine("sqlite:///store.db")


TRACE: list[dict[str, object]] = [
    {"kind": "reasoning", "text": "Multiply."},
    {"kind": "tool_call", "name": "calculator", "arguments": {"expression": "23 × 19"}},
    {"kind": "tool_result", "output": "437"},
    {"kind": "answer", "text": "437", "usage": {"input_tokens": 40, "output_tokens": 2}},
]
USAGE = {"input_tokens": 120, "output_tokens": 9}


async def test_conversation_trace_and_usage_round_trip(store: RunStore) -> None:
    run = a_run(conversation_id="conv-1", trace=TRACE, usage=USAGE)

    await store.create(run)

    got = await store.get(ALICE, "run-1")
    assert got == run
    assert got is not None and got.trace == TRACE and got.usage == USAGE


async def test_a_run_without_a_trace_stores_null(store: RunStore) -> None:
    await store.create(a_run())

    got = await store.get(ALICE, "run-1")

    assert got is not None
    assert (got.conversation_id, got.trace, got.usage) == (None, None, None)


async def test_end_records_status_answer_trace_and_usage(store: RunStore) -> None:
    await store.create(a_run())
    await store.set_status(ALICE, "run-1", RunStatus.RUNNING)

    assert await store.end(ALICE, "run-1", RunStatus.DONE, answer="437", trace=TRACE, usage=USAGE)

    done = await store.get(ALICE, "run-1")
    assert done is not None and done.status is RunStatus.DONE
    assert (done.answer, done.trace, done.usage, done.error_code) == ("437", TRACE, USAGE, None)
    assert done.finished_at is not None


async def test_an_answered_run_ends_with_its_exchange_in_its_conversation(
    store: RunStore, conversations: ConversationStore
) -> None:
    await conversations.ensure(ALICE, "c-1", "sums")
    await store.create(a_run(conversation_id="c-1"))
    exchange = Exchange(conversation_id="c-1", question="What is 23 x 19?", answer="437")

    ended = await store.end_answered(ALICE, "run-1", exchange, trace=TRACE, usage=USAGE)
    # A redelivered finalizer: the same message, nothing appended, the end kept.
    assert await store.end_answered(ALICE, "run-1", exchange, trace=[], usage={}) == ended

    done = await store.get(ALICE, "run-1")
    assert done is not None and (done.status, done.answer, done.trace) == (
        RunStatus.DONE,
        "437",
        TRACE,
    )
    history = await conversations.history(ALICE, "c-1")
    assert [(m.role, m.content, m.run_id) for m in history] == [
        ("user", "What is 23 x 19?", "run-1"),
        ("assistant", "437", "run-1"),
    ]
    assert history[0].id == ended.asked
    assert ended.next is None  # nothing waits behind it


async def test_an_answer_for_a_conversation_that_is_gone_writes_nothing(
    store: RunStore,
) -> None:
    await store.create(a_run(conversation_id="c-gone"))
    exchange = Exchange(conversation_id="c-gone", question="q", answer="a")

    with pytest.raises(ConversationNotFound):
        await store.end_answered(ALICE, "run-1", exchange, trace=TRACE, usage=USAGE)

    run = await store.get(ALICE, "run-1")
    assert run is not None and not run.is_terminal


async def test_end_with_an_error_code(store: RunStore) -> None:
    await store.create(a_run())

    assert await store.end(
        ALICE,
        "run-1",
        RunStatus.ERROR,
        answer="I don't know.",
        trace=[],
        usage={},
        error_code="tool_loop_exhausted",
    )

    ended = await store.get(ALICE, "run-1")
    assert ended is not None
    assert (ended.status, ended.error_code) == (RunStatus.ERROR, "tool_loop_exhausted")
    assert (ended.trace, ended.usage) == ([], {})


async def test_ending_twice_keeps_the_first_result(store: RunStore) -> None:
    await store.create(a_run())
    assert await store.end(ALICE, "run-1", RunStatus.DONE, answer="437", trace=TRACE, usage=USAGE)
    first = await store.get(ALICE, "run-1")

    assert not await store.end(ALICE, "run-1", RunStatus.DONE, answer="other", trace=[], usage={})

    assert await store.get(ALICE, "run-1") == first


async def test_end_writes_once_and_says_whether_it_applied(store: RunStore) -> None:
    await store.create(a_run())
    assert await store.end(ALICE, "run-1", RunStatus.DONE, answer="437", trace=TRACE, usage=USAGE)
    assert not await store.end(ALICE, "run-1", RunStatus.ERROR, answer="x", trace=[], usage={})
    assert not await store.end(ALICE, "nope", RunStatus.DONE, answer="a", trace=[], usage={})
    stored = await store.get(ALICE, "run-1")
    assert stored is not None and stored.status == RunStatus.DONE
    assert (stored.answer, stored.trace, stored.usage) == ("437", TRACE, USAGE)
    assert stored.finished_at is not None


async def test_end_does_not_touch_a_run_that_already_ended(store: RunStore) -> None:
    await store.create(a_run())
    cancelled = await store.set_status(ALICE, "run-1", RunStatus.CANCELLED)

    assert not await store.end(
        ALICE, "run-1", RunStatus.DONE, answer="late", trace=TRACE, usage=USAGE
    )

    after = await store.get(ALICE, "run-1")
    assert after == cancelled
    assert after is not None and (after.answer, after.trace, after.usage) == (None, None, None)


async def test_end_keeps_what_it_is_not_given(store: RunStore) -> None:
    await store.create(a_run())
    await store.set_status(ALICE, "run-1", RunStatus.SUSPENDED, answer="draft")

    assert await store.end(ALICE, "run-1", RunStatus.TIMEOUT, answer=None, trace=None, usage=None)

    ended = await store.get(ALICE, "run-1")
    assert ended is not None and ended.status is RunStatus.TIMEOUT
    assert (ended.answer, ended.trace, ended.usage) == ("draft", None, None)


async def test_racing_ends_store_one_whole_result(store: RunStore) -> None:
    await store.create(a_run())

    results = await asyncio.gather(
        store.end(ALICE, "run-1", RunStatus.DONE, answer="a", trace=TRACE, usage=USAGE),
        store.end(ALICE, "run-1", RunStatus.ERROR, answer="b", trace=[], usage={}, error_code="x"),
    )

    assert sorted(results) == [False, True]  # exactly one of them ended the run
    stored = await store.get(ALICE, "run-1")
    assert stored is not None
    outcome = (stored.status, stored.answer, stored.trace, stored.usage, stored.error_code)
    assert outcome in [
        (RunStatus.DONE, "a", TRACE, USAGE, None),
        (RunStatus.ERROR, "b", [], {}, "x"),
    ]
    assert outcome[0] == (RunStatus.DONE if results[0] else RunStatus.ERROR)


async def test_end_refuses_a_status_that_does_not_end_the_run(store: RunStore) -> None:
    await store.create(a_run())

    with pytest.raises(ValueError, match="terminal"):
        await store.end(ALICE, "run-1", RunStatus.RUNNING, answer=None, trace=None, usage=None)


async def test_end_of_an_unknown_run_is_false(store: RunStore) -> None:
    assert not await store.end(ALICE, "nope", RunStatus.DONE, answer="a", trace=[], usage={})


async def test_create_if_absent_creates_a_new_run(store: RunStore) -> None:
    run = a_run(created_at=T0, updated_at=T0, conversation_id="conv-1")

    assert await store.create_if_absent(run) == (run, True)
    assert await store.get(ALICE, "run-1") == run


async def test_create_if_absent_returns_the_stored_run_when_redelivered(store: RunStore) -> None:
    first = await store.create(a_run(created_at=T0, updated_at=T0))
    await store.set_status(ALICE, "run-1", RunStatus.RUNNING)

    stored, created = await store.create_if_absent(a_run(question="a different question"))

    assert created is False
    assert stored.question == first.question and stored.status is RunStatus.RUNNING
    assert stored == await store.get(ALICE, "run-1")


async def test_create_if_absent_refuses_another_tenants_id(store: RunStore) -> None:
    theirs = await store.create(a_run(tenant_id="tenant-b"))

    with pytest.raises(StoreError, match="already exists") as caught:
        await store.create_if_absent(a_run())

    assert "tenant-b" not in str(caught.value)
    assert await store.get(B_ALICE, "run-1") == theirs
    assert await store.get(ALICE, "run-1") is None


async def test_racing_create_if_absent_creates_once(store: RunStore) -> None:
    results = await asyncio.gather(*(store.create_if_absent(a_run()) for _ in range(5)))

    assert sorted(created for _, created in results) == [False, False, False, False, True]
    assert len({run.id for run, _ in results}) == 1
    assert [r.id for r in await store.list(ALICE)] == ["run-1"]


# --- a run belongs to the user who started it ------------------------------------------------

BOB = Scope.user("tenant-a", "bob")
ADMIN = Scope.admin("tenant-a", "root")


async def test_another_user_of_the_tenant_does_not_see_the_run(store: RunStore) -> None:
    run = await store.create(a_run(created_at=T0))
    await store.create(a_run("bobs", subject="bob", created_at=T0 + timedelta(seconds=1)))

    assert await store.get(BOB, "run-1") is None
    assert [r.id for r in await store.list(BOB)] == ["bobs"]
    assert [r.id for r in await store.list(ALICE)] == ["run-1"]
    assert await store.list(BOB, before="run-1") == []  # another's cursor: an empty page
    assert await store.get(ALICE, "run-1") == run


async def test_only_the_owner_changes_a_run(store: RunStore) -> None:
    await store.create(a_run())

    assert await store.set_status(BOB, "run-1", RunStatus.CANCELLED) is None
    assert await store.set_status(ADMIN, "run-1", RunStatus.CANCELLED) is None
    assert not await store.end(BOB, "run-1", RunStatus.DONE, answer="x", trace=[], usage={})
    assert not await store.end(ADMIN, "run-1", RunStatus.DONE, answer="x", trace=[], usage={})

    stored = await store.get(ALICE, "run-1")
    assert stored is not None and stored.status is RunStatus.QUEUED and stored.answer is None


async def test_an_admin_reads_and_lists_every_run_of_its_tenant_only(store: RunStore) -> None:
    await store.create(a_run("a1", created_at=T0))
    await store.create(a_run("b1", subject="bob", created_at=T0 + timedelta(seconds=1)))
    await store.create(a_run("x1", tenant_id="tenant-b", created_at=T0 + timedelta(seconds=2)))

    assert [r.id for r in await store.list(ADMIN)] == ["b1", "a1"]
    assert [r.id for r in await store.list(ADMIN, limit=1, before="b1")] == ["a1"]
    assert (await store.get(ADMIN, "b1") or a_run()).subject == "bob"
    assert await store.get(ADMIN, "x1") is None
    assert await store.get(Scope.admin("tenant-b", "root"), "a1") is None


async def test_create_if_absent_refuses_another_users_id(store: RunStore) -> None:
    theirs = await store.create(a_run(subject="bob"))

    with pytest.raises(StoreError, match="already exists") as caught:
        await store.create_if_absent(a_run())

    assert "bob" not in str(caught.value)
    assert await store.get(BOB, "run-1") == theirs
