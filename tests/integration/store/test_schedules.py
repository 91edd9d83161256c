"""ScheduleStore conformance on SQLite and Postgres: owners, and one claim per tick.

A tick is claimed by moving the schedule's next tick on (compare-and-set on its version)
and recording the tick, in one transaction: of two stores (two replicas, each its own
engine) that read the same due schedule, one claims the tick; a paused or deleted
schedule claims nothing; another user's schedule is invisible.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from bus.store import ScheduleRecord, ScheduleStore, Scope, TickState, make_engine
from bus.store.schedules import tick_run_id
from bus.store.scope import set_statement

ALICE = Scope.user("tenant-a", "alice")
BOB = Scope.user("tenant-a", "bob")
ADMIN = Scope.admin("tenant-a", "root")
OTHER_TENANT = Scope.user("tenant-b", "alice")
T0 = 1_900_000_000  # a tick, in Unix seconds


@pytest.fixture
def schedules(engine: AsyncEngine) -> ScheduleStore:
    return ScheduleStore(engine)


def record(schedule_id: str = "s1", owner: Scope = ALICE, next_run_at: int = T0) -> ScheduleRecord:
    now = datetime.fromtimestamp(T0 - 600, UTC)
    return ScheduleRecord(
        id=schedule_id,
        tenant_id=owner.tenant_id,
        subject=owner.subject,
        key_id="k1",
        groups=("eng",),
        cron="0 * * * *",
        timezone="UTC",
        question="What changed?",
        settings={"mode": "multi"},
        webhook_url=None,
        missed="skip",
        conversation_id=f"conv-{schedule_id}",
        paused=False,
        next_run_at=next_run_at,
        version=0,
        created_at=now,
        updated_at=now,
    )


async def count(engine: AsyncEngine, table: str) -> int:
    """Rows of ``table``, past row-level security (``superuser_engine``)."""
    async with engine.connect() as conn:
        return (await conn.execute(text(f"SELECT count(*) FROM {table}"))).scalar_one()


async def test_a_schedule_is_its_owners_and_its_tenant_admins_to_read_and_nobody_elses(
    schedules: ScheduleStore,
) -> None:
    await schedules.create(record("s1"))
    await schedules.create(record("s2", BOB))

    mine = await schedules.get(ALICE, "s1")
    assert mine is not None and mine.groups == ("eng",) and mine.settings == {"mode": "multi"}
    assert await schedules.get(BOB, "s1") is None
    assert await schedules.get(OTHER_TENANT, "s1") is None
    assert [s.id for s in await schedules.list(ALICE)] == ["s1"]
    assert sorted(s.id for s in await schedules.list(ADMIN)) == ["s1", "s2"]
    assert await schedules.list(OTHER_TENANT) == []
    # Writes are the owner's only, whatever the scope reads.
    assert await schedules.set_paused(ADMIN, "s1", True, T0) is None
    assert not await schedules.delete(BOB, "s1")
    assert (await schedules.get(ALICE, "s1")) == mine


async def test_a_due_tick_is_claimed_once_and_moves_the_schedule_on(
    schedules: ScheduleStore, superuser_engine: AsyncEngine
) -> None:
    await schedules.create(record())
    [due] = await schedules.due(T0)

    tick = await schedules.claim(due, T0, T0 + 3600, TickState.CLAIMED, T0)
    again = await schedules.claim(due, T0, T0 + 3600, TickState.CLAIMED, T0)  # a stale read

    assert tick is not None and tick.run_id == tick_run_id("s1", T0)
    assert again is None
    assert await schedules.due(T0 + 3599) == []
    moved = await schedules.get(ALICE, "s1")
    assert moved is not None and (moved.next_run_at, moved.version) == (T0 + 3600, 1)
    assert await count(superuser_engine, "schedule_ticks") == 1


async def test_two_replicas_claiming_the_same_tick_at_once_claim_it_once(
    schedules: ScheduleStore, store_url: str
) -> None:
    await schedules.create(record())
    other_engine = make_engine(store_url)
    try:
        other = ScheduleStore(other_engine)
        [mine], [theirs] = await asyncio.gather(schedules.due(T0), other.due(T0))
        results = await asyncio.gather(
            *(
                store.claim(due, T0, T0 + 3600, TickState.CLAIMED, T0)
                for store, due in [(schedules, mine), (other, theirs)] * 3
            )
        )
    finally:
        await other_engine.dispose()

    assert len([r for r in results if r is not None]) == 1
    assert [t.tick_at for t in await schedules.ticks(ALICE, "s1")] == [T0]


async def test_a_paused_or_deleted_schedule_is_not_due_and_claims_nothing(
    schedules: ScheduleStore, superuser_engine: AsyncEngine
) -> None:
    await schedules.create(record("s1"))
    await schedules.create(record("s2"))
    read = {s.id: s for s in await schedules.due(T0)}

    paused = await schedules.set_paused(ALICE, "s1", True, T0 + 60)
    assert await schedules.delete(ALICE, "s2")

    assert paused is not None and paused.paused and paused.version == 1
    assert await schedules.claim(read["s1"], T0, T0 + 3600, TickState.CLAIMED, T0) is None
    assert await schedules.claim(read["s2"], T0, T0 + 3600, TickState.CLAIMED, T0) is None
    assert await schedules.due(T0 + 10**6) == []
    assert await count(superuser_engine, "schedule_ticks") == 0
    resumed = await schedules.set_paused(ALICE, "s1", False, T0 + 120)
    assert resumed is not None and not resumed.paused and resumed.next_run_at == T0 + 120
    assert [s.id for s in await schedules.due(T0 + 120)] == ["s1"]


async def test_a_claim_whose_start_was_not_recorded_is_unpublished_until_marked(
    schedules: ScheduleStore,
) -> None:
    await schedules.create(record("s1"))
    await schedules.create(record("s2", BOB))
    claimed = {}
    for due in await schedules.due(T0):
        tick = await schedules.claim(due, T0, T0 + 3600, TickState.CLAIMED, T0)
        assert tick is not None
        claimed[due.id] = tick
    later = {s.id: s for s in await schedules.due(T0 + 3600)}
    skipped = await schedules.claim(later["s1"], T0 + 3600, T0 + 7200, TickState.SKIPPED, T0 + 3600)

    early = await schedules.unpublished(datetime.fromtimestamp(T0, UTC))
    late = await schedules.unpublished(datetime.fromtimestamp(T0 + 31, UTC))
    await schedules.mark(claimed["s1"], TickState.STARTED)
    await schedules.mark(claimed["s2"], TickState.REFUSED, "key_revoked")
    after = await schedules.unpublished(datetime.fromtimestamp(T0 + 31, UTC))

    assert early == [] and sorted(t.subject for t in late) == ["alice", "bob"]  # every tenant's
    assert skipped is not None and skipped.run_id is None
    assert after == []
    [bobs] = await schedules.ticks(BOB, "s2")
    assert (bobs.state, bobs.error) == (TickState.REFUSED, "key_revoked")
    assert await schedules.ticks(ALICE, "s2") == []


async def test_deleting_a_schedule_deletes_its_ticks(
    schedules: ScheduleStore, superuser_engine: AsyncEngine
) -> None:
    await schedules.create(record())
    [due] = await schedules.due(T0)
    assert await schedules.claim(due, T0, T0 + 3600, TickState.CLAIMED, T0) is not None

    assert await schedules.delete(ALICE, "s1")

    assert await schedules.get(ALICE, "s1") is None
    assert await count(superuser_engine, "schedule_ticks") == 0
    assert not await schedules.delete(ALICE, "s1")


@pytest.mark.parametrize(
    "store_url", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)
async def test_on_postgres_row_level_security_shows_a_raw_query_only_its_scopes_schedules(
    schedules: ScheduleStore, engine: AsyncEngine, superuser_engine: AsyncEngine
) -> None:
    for n, owner in enumerate((ALICE, BOB, OTHER_TENANT)):
        await schedules.create(record(f"s{n}", owner))
    for due in await schedules.due(T0):
        assert await schedules.claim(due, T0, T0 + 3600, TickState.CLAIMED, T0) is not None

    async def seen(conn: AsyncConnection) -> tuple[int, int]:
        got = [
            int(await conn.scalar(text(f"SELECT count(*) FROM {t}")) or 0)
            for t in ("schedules", "schedule_ticks")
        ]
        return got[0], got[1]

    async with superuser_engine.connect() as conn:
        everything = await seen(conn)
    async with engine.connect() as conn:
        unscoped = await seen(conn)
    async with engine.connect() as conn:
        await conn.execute(set_statement(), ALICE.settings())
        alices = await seen(conn)
    async with engine.connect() as conn:
        await conn.execute(set_statement(), ADMIN.settings())
        tenants = await seen(conn)

    assert (everything, unscoped, alices, tenants) == ((3, 3), (0, 0), (1, 1), (2, 2))
