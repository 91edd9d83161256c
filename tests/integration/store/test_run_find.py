"""RunStore.find conformance: filters, most recently updated first, cursor pages, the count."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bus.store import RunCursor, RunQuery, RunRecord, RunStatus, RunStore, Scope

T0 = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)
ALICE = Scope.user("tenant-a", "alice")


def a_run(run_id: str, minute: int, **changes: object) -> RunRecord:
    at = T0 + timedelta(minutes=minute)
    fields: dict[str, object] = {
        "id": run_id,
        "tenant_id": "tenant-a",
        "subject": "alice",
        "mode": "single",
        "question": "q",
        "created_at": T0,
        "updated_at": at,
    }
    return RunRecord.model_validate(fields | changes)


async def test_find_lists_the_most_recently_updated_first_and_counts_all(
    store: RunStore,
) -> None:
    for run in [a_run("r1", 3), a_run("r2", 1), a_run("r3", 2)]:
        await store.create(run)

    page, total = await store.find(ALICE, RunQuery(), limit=2)
    after = RunCursor(updated_at=page[-1].updated_at, run_id=page[-1].id)
    rest, again = await store.find(ALICE, RunQuery(), limit=2, after=after)

    assert [r.id for r in page] == ["r1", "r3"] and total == 3
    assert [r.id for r in rest] == ["r2"] and again == 3


async def test_find_filters_by_conversation_status_and_update_time(store: RunStore) -> None:
    await store.create(a_run("r1", 1, conversation_id="c1", status=RunStatus.DONE))
    await store.create(a_run("r2", 2, conversation_id="c1", status=RunStatus.RUNNING))
    await store.create(a_run("r3", 3, conversation_id="c2", status=RunStatus.DONE))

    by_conversation, _ = await store.find(ALICE, RunQuery(conversation_id="c1"), limit=10)
    done = RunQuery(statuses=frozenset({RunStatus.DONE}))
    by_status, n_done = await store.find(ALICE, done, limit=10)
    since, _ = await store.find(ALICE, RunQuery(updated_since=T0 + timedelta(minutes=2)), 10)

    assert [r.id for r in by_conversation] == ["r2", "r1"]
    assert [r.id for r in by_status] == ["r3", "r1"] and n_done == 2
    assert [r.id for r in since] == ["r3", "r2"]


async def test_find_never_shows_another_users_or_tenants_runs(store: RunStore) -> None:
    await store.create(a_run("mine", 1))
    await store.create(a_run("bobs", 2, subject="bob"))
    await store.create(a_run("other-tenant", 3, tenant_id="tenant-b"))

    page, total = await store.find(ALICE, RunQuery(), limit=10)

    assert [r.id for r in page] == ["mine"] and total == 1
