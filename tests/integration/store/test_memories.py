"""The memory store on SQLite and Postgres: one row per user and topic, newer replaces
older, applied records are idempotent, and only the owner reads or changes a memory."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from agents.roles.remember import make_memory_applier
from bus.ledger import LedgerRecord
from bus.store import MemoryNotFound, MemoryStore, MemoryWrite, Scope

ALICE = Scope.user("t1", "alice")
BOB = Scope.user("t1", "bob")
OTHER = Scope.user("t2", "alice")
ADMIN = Scope.admin("t1", "root")
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def said(key: str, topic: str, words: str, at: datetime, owner: Scope = ALICE) -> MemoryWrite:
    return MemoryWrite(
        key=key,
        tenant_id=owner.tenant_id,
        subject=owner.subject,
        topic=topic,
        text=words,
        said_at=at,
        run_id=f"run-{key}",
        conversation_id="c1",
        message_id=7,
    )


@pytest.fixture
def memories(engine: AsyncEngine) -> MemoryStore:
    return MemoryStore(engine)


async def test_a_newer_statement_replaces_an_older_one_never_the_reverse(
    memories: MemoryStore,
) -> None:
    await memories.remember([said("a", "workplace", "Works in Lisbon.", T0)])
    await memories.remember([said("b", "workplace", "Works in Porto.", T0 + timedelta(days=1))])
    # Applied late (a recorder that fell behind): the older statement changes nothing.
    await memories.remember([said("c", "workplace", "Works in Faro.", T0 - timedelta(days=1))])

    [memory] = await memories.list(ALICE)
    assert (memory.text, memory.run_id, memory.message_id) == ("Works in Porto.", "run-b", 7)


async def test_a_record_applied_twice_is_written_once(memories: MemoryStore) -> None:
    record = LedgerRecord(
        kind="memory",
        key="run1:5:0:0",
        tenant_id="t1",
        data={
            "subject": "alice",
            "topic": "language",
            "text": "Answer the user in Portuguese.",
            "run_id": "run1",
            "conversation_id": "c1",
            "message_id": 3,
            "said_at": T0.timestamp(),
        },
    )
    apply = make_memory_applier(memories)
    await apply([record])
    first = await memories.list(ALICE)
    await apply([record, record])  # a recorder that died between its commit and its ack

    assert await memories.list(ALICE) == first and len(first) == 1
    assert first[0].run_id == "run1" and first[0].message_id == 3


async def test_only_the_owner_lists_edits_or_deletes(memories: MemoryStore) -> None:
    await memories.remember(
        [
            said("a", "workplace", "Works in Lisbon.", T0),
            said("b", "workplace", "Works in Oslo.", T0, owner=BOB),
            said("c", "workplace", "Works in Tokyo.", T0, owner=OTHER),
        ]
    )
    [mine] = await memories.list(ALICE)
    assert mine.text == "Works in Lisbon."
    assert await memories.list(ADMIN) == []  # memories are personal, an admin's too
    for other in (BOB, OTHER, ADMIN):
        with pytest.raises(MemoryNotFound):
            await memories.edit(other, mine.id, "hijacked")
        assert await memories.delete(other, mine.id) is False
    edited = await memories.edit(ALICE, mine.id, "  Works from home.  ")
    assert (edited.text, edited.edited, edited.run_id) == ("Works from home.", True, "run-a")
    with pytest.raises(ValueError, match="1 to 500"):
        await memories.edit(ALICE, mine.id, "x" * 501)
    assert await memories.delete(ALICE, mine.id) is True
    assert await memories.list(ALICE) == []
    assert [m.text for m in await memories.list(BOB)] == ["Works in Oslo."]


async def test_for_question_puts_matching_memories_first(memories: MemoryStore) -> None:
    await memories.remember(
        [
            said("a", "workplace", "Works in the Lisbon office.", T0),
            said("b", "language", "Answer the user in Portuguese.", T0 + timedelta(seconds=1)),
        ]
    )
    found = await memories.for_question(ALICE, "where is the Lisbon office parking")
    assert [m.topic for m in found] == ["workplace", "language"]
    assert [m.topic for m in await memories.for_question(ALICE, "hello", limit=1)] == ["language"]
    assert await memories.for_question(BOB, "Lisbon office") == []


async def test_delete_for_user_erases_one_users_memories_only(memories: MemoryStore) -> None:
    await memories.remember(
        [
            said("a", "workplace", "Works in Lisbon.", T0),
            said("b", "language", "Answer in Portuguese.", T0),
            said("c", "workplace", "Works in Oslo.", T0, owner=BOB),
            said("d", "workplace", "Works in Tokyo.", T0, owner=OTHER),
        ]
    )
    assert await memories.delete_for_user("t1", "alice") == 2
    assert await memories.count(ALICE) == 0
    assert await memories.count(BOB) == 1 and await memories.count(OTHER) == 1


async def test_a_user_keeps_at_most_the_newest_memories(
    memories: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("bus.store.memories.MAX_MEMORIES", 2)
    for i, topic in enumerate(("home", "team", "role")):
        await memories.remember([said(topic, topic, f"Said {topic}.", T0 + timedelta(i))])
    await memories.remember([said("b", "team", "Said nothing.", T0, owner=BOB)])

    assert sorted(m.topic for m in await memories.list(ALICE)) == ["role", "team"]
    assert await memories.count(BOB) == 1


@pytest.mark.parametrize(
    "store_url", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)
async def test_row_security_hides_memories_from_a_query_without_scope(
    memories: MemoryStore, engine: AsyncEngine
) -> None:
    await memories.remember([said("a", "workplace", "Works in Lisbon.", T0)])
    async with engine.connect() as conn:
        assert (await conn.execute(text("SELECT count(*) FROM memories"))).scalar() == 0
