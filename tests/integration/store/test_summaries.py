"""SummaryStore conformance: the same behaviour on SQLite and Postgres.

A summary covers a branch's path through one message; it is written once, serves every
branch through that message, and is unseen by branches that left the path before it and
by anyone but its conversation's owner (and the tenant's admins, reading).
"""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from bus.errors import StoreError
from bus.store import ConversationNotFound, ConversationStore, MessageRole, Scope, SummaryStore
from bus.store.scope import set_statement

USER, ASSISTANT = MessageRole.USER, MessageRole.ASSISTANT
ALICE = Scope.user("tenant-a", "alice")
BOB = Scope.user("tenant-a", "bob")
B_ALICE = Scope.user("tenant-b", "alice")
ADMIN = Scope.admin("tenant-a", "root")


@pytest.fixture
def summaries(engine: AsyncEngine) -> SummaryStore:
    return SummaryStore(engine)


async def a_line(conversations: ConversationStore, turns: int, cid: str = "conv-1") -> list[int]:
    """A conversation of ``turns`` question-answer turns; the message ids, oldest first."""
    await conversations.ensure(ALICE, cid, "q0")
    ids: list[int] = []
    for i in range(turns):
        ids.append(await conversations.append(ALICE, cid, USER, f"q{i}", f"run-{cid}-{i}"))
        ids.append(await conversations.append(ALICE, cid, ASSISTANT, f"a{i}", f"run-{cid}-{i}"))
    return ids


async def test_a_stored_summary_comes_back_with_what_it_covers(
    conversations: ConversationStore, summaries: SummaryStore
) -> None:
    ids = await a_line(conversations, 2)

    stored = await summaries.put(ALICE, "conv-1", ids[1], "q0 was asked", messages=2, run_id="r")

    assert (stored.through_message_id, stored.content, stored.messages) == (
        ids[1],
        "q0 was asked",
        2,
    )
    assert (stored.tenant_id, stored.subject, stored.run_id) == ("tenant-a", "alice", "r")
    assert await summaries.get(ALICE, "conv-1", ids[1]) == stored
    assert await summaries.list(ALICE, "conv-1") == [stored]


async def test_the_first_summary_through_a_message_is_the_only_one(
    conversations: ConversationStore, summaries: SummaryStore
) -> None:
    ids = await a_line(conversations, 2)
    first = await summaries.put(ALICE, "conv-1", ids[1], "first", messages=2, run_id="r1")

    again = await summaries.put(ALICE, "conv-1", ids[1], "second", messages=2, run_id="r2")

    assert again == first
    assert [s.content for s in await summaries.list(ALICE, "conv-1")] == ["first"]


async def test_racing_writers_of_one_summary_both_get_the_stored_one(
    conversations: ConversationStore, summaries: SummaryStore
) -> None:
    ids = await a_line(conversations, 2)

    one, two = await asyncio.gather(
        summaries.put(ALICE, "conv-1", ids[3], "one", messages=4, run_id="r1"),
        summaries.put(ALICE, "conv-1", ids[3], "two", messages=4, run_id="r2"),
    )

    assert one == two
    assert len(await summaries.list(ALICE, "conv-1")) == 1


async def test_a_branch_without_a_summary_is_all_its_messages(
    conversations: ConversationStore, summaries: SummaryStore
) -> None:
    ids = await a_line(conversations, 3)

    branch = await summaries.branch(ALICE, "conv-1", ids[-1])

    assert branch.summary is None and branch.complete
    assert [m.id for m in branch.messages] == ids


async def test_a_branch_holds_its_newest_summary_and_only_the_messages_after_it(
    conversations: ConversationStore, summaries: SummaryStore
) -> None:
    ids = await a_line(conversations, 4)
    await summaries.put(ALICE, "conv-1", ids[1], "turn 0", messages=2, run_id="r")
    newest = await summaries.put(ALICE, "conv-1", ids[3], "turns 0-1", messages=4, run_id="r")

    branch = await summaries.branch(ALICE, "conv-1", ids[-1])

    assert branch.summary == newest and branch.complete
    assert [m.content for m in branch.messages] == ["q2", "a2", "q3", "a3"]


async def test_a_branch_ending_at_the_summarized_message_has_nothing_after_it(
    conversations: ConversationStore, summaries: SummaryStore
) -> None:
    ids = await a_line(conversations, 2)
    stored = await summaries.put(ALICE, "conv-1", ids[3], "all", messages=4, run_id="r")

    branch = await summaries.branch(ALICE, "conv-1", ids[3])

    assert branch.summary == stored and branch.messages == []


async def test_a_branch_through_the_summarized_message_shares_its_summary(
    conversations: ConversationStore, summaries: SummaryStore
) -> None:
    ids = await a_line(conversations, 3)
    stored = await summaries.put(ALICE, "conv-1", ids[1], "turn 0", messages=2, run_id="r")
    # An edited second question: a sibling of q1, after a0.
    edited = await conversations.append(
        ALICE, "conv-1", USER, "q1 edited", "run-e", parent_id=ids[1]
    )

    branch = await summaries.branch(ALICE, "conv-1", edited)

    assert branch.summary == stored
    assert [m.content for m in branch.messages] == ["q1 edited"]


async def test_a_branch_that_left_before_the_summarized_message_does_not_see_it(
    conversations: ConversationStore, summaries: SummaryStore
) -> None:
    ids = await a_line(conversations, 3)
    await summaries.put(ALICE, "conv-1", ids[3], "turns 0-1", messages=4, run_id="r")
    # Regenerated from the first answer: a new second question whose path skips ids[2:].
    early = await conversations.append(ALICE, "conv-1", USER, "q1 again", "run-e", parent_id=ids[1])

    branch = await summaries.branch(ALICE, "conv-1", early)

    assert branch.summary is None and branch.complete
    assert [m.content for m in branch.messages] == ["q0", "a0", "q1 again"]


async def test_a_walk_cut_by_its_limit_says_older_messages_exist(
    conversations: ConversationStore, summaries: SummaryStore
) -> None:
    ids = await a_line(conversations, 3)

    branch = await summaries.branch(ALICE, "conv-1", ids[-1], limit=4)

    assert [m.id for m in branch.messages] == ids[-4:]
    assert branch.summary is None and not branch.complete
    with pytest.raises(ValueError, match="at least 1"):
        await summaries.branch(ALICE, "conv-1", ids[-1], limit=0)


async def test_a_message_of_another_conversation_cannot_be_summarized_through(
    conversations: ConversationStore, summaries: SummaryStore
) -> None:
    await a_line(conversations, 1)
    other = await a_line(conversations, 1, cid="conv-2")

    with pytest.raises(StoreError, match="not in conversation"):
        await summaries.put(ALICE, "conv-1", other[0], "x", messages=1, run_id="r")
    assert await summaries.list(ALICE, "conv-1") == []


async def test_only_the_owner_writes_and_another_user_or_tenant_sees_nothing(
    conversations: ConversationStore, summaries: SummaryStore
) -> None:
    ids = await a_line(conversations, 2)
    stored = await summaries.put(ALICE, "conv-1", ids[1], "mine", messages=2, run_id="r")

    for stranger in (BOB, B_ALICE, ADMIN):  # an admin reads, never writes
        with pytest.raises(ConversationNotFound):
            await summaries.put(stranger, "conv-1", ids[3], "theirs", messages=4, run_id="x")
    for stranger in (BOB, B_ALICE):
        assert await summaries.get(stranger, "conv-1", ids[1]) is None
        assert await summaries.list(stranger, "conv-1") == []
        branch = await summaries.branch(stranger, "conv-1", ids[-1])
        assert branch.summary is None and branch.messages == []
    assert await summaries.get(ADMIN, "conv-1", ids[1]) == stored
    assert (await summaries.branch(ADMIN, "conv-1", ids[-1])).summary == stored
    assert await summaries.list(ALICE, "conv-1") == [stored]


async def test_deleting_the_conversation_deletes_its_summaries(
    conversations: ConversationStore, summaries: SummaryStore, superuser_engine: AsyncEngine
) -> None:
    ids = await a_line(conversations, 1)
    await summaries.put(ALICE, "conv-1", ids[1], "gone soon", messages=2, run_id="r")

    assert await conversations.delete(ALICE, "conv-1")

    async with superuser_engine.connect() as conn:
        left = (await conn.execute(text("SELECT count(*) FROM conversation_summaries"))).scalar()
    assert left == 0


@pytest.mark.parametrize(
    "store_url", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)
async def test_row_level_security_opens_exactly_the_owners_summaries(
    engine: AsyncEngine, conversations: ConversationStore, summaries: SummaryStore
) -> None:
    for scope in (ALICE, BOB, B_ALICE):
        cid = f"conv-{scope.tenant_id}-{scope.subject}"
        await conversations.ensure(scope, cid, "q")
        first = await conversations.append(scope, cid, USER, "q", f"run-{cid}")
        await summaries.put(scope, cid, first, f"secret of {cid}", messages=1, run_id="r")

    async def visible(scope: Scope | None) -> list[str]:
        async with engine.connect() as conn, conn.begin():
            if scope is not None:
                await conn.execute(set_statement(), scope.settings())
            rows = await conn.execute(text("SELECT content FROM conversation_summaries"))
            return sorted(rows.scalars())

    assert await visible(None) == []
    assert await visible(ALICE) == ["secret of conv-tenant-a-alice"]
    assert len(await visible(ADMIN)) == 2
    assert len(await visible(Scope.operator())) == 3
    with pytest.raises(DBAPIError, match="row-level security"):
        async with engine.connect() as conn, conn.begin():
            await conn.execute(set_statement(), ALICE.settings())
            await conn.execute(
                text(
                    "INSERT INTO conversation_summaries (conversation_id, through_message_id,"
                    " tenant_id, subject, content, messages, created_at)"
                    " VALUES ('conv-tenant-a-alice', 1, 'tenant-a', 'bob', 'planted', 1, now())"
                )
            )
