"""ConversationStore conformance: the same behaviour on SQLite and Postgres."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from bus.errors import StoreError
from bus.store import (
    ConversationNotFound,
    ConversationRecord,
    ConversationStore,
    MessageRole,
    Scope,
)

USER, ASSISTANT = MessageRole.USER, MessageRole.ASSISTANT
ALICE = Scope.user("tenant-a", "alice")
B_ALICE = Scope.user("tenant-b", "alice")
BOB = Scope.user("tenant-a", "bob")
ADMIN = Scope.admin("tenant-a", "root")


async def a_conversation(
    store: ConversationStore, conversation_id: str = "conv-1", tenant_id: str = "tenant-a"
) -> ConversationRecord:
    owner = Scope.user(tenant_id, "alice")
    return await store.ensure(owner, conversation_id, "What is a stream?")


async def count_messages(engine: AsyncEngine) -> int:
    async with engine.connect() as conn:
        return (await conn.execute(text("SELECT count(*) FROM messages"))).scalar_one()


async def test_ensure_creates_a_conversation_that_get_returns(
    conversations: ConversationStore,
) -> None:
    created = await a_conversation(conversations)

    assert (created.id, created.tenant_id, created.subject) == ("conv-1", "tenant-a", "alice")
    assert created.title == "What is a stream?"
    assert created.created_at == created.updated_at
    assert created.created_at.utcoffset() == timedelta(0)
    assert await conversations.get(ALICE, "conv-1") == created


async def test_the_title_is_one_line_of_at_most_120_characters(
    conversations: ConversationStore,
) -> None:
    long_question = "Why\n  is   " + "x" * 200

    created = await conversations.ensure(ALICE, "conv-1", long_question)
    untitled = await conversations.ensure(ALICE, "conv-2", None)

    assert created.title == ("Why is " + "x" * 200)[:120]
    assert untitled.title is None


async def test_ensure_is_idempotent_for_the_owner(conversations: ConversationStore) -> None:
    first = await a_conversation(conversations)

    again = await conversations.ensure(ALICE, "conv-1", "A different question")

    assert again == first
    assert [c.id for c in await conversations.list(ALICE)] == ["conv-1"]


async def test_ensure_refuses_another_tenants_conversation(
    conversations: ConversationStore,
) -> None:
    theirs = await a_conversation(conversations, tenant_id="tenant-b")

    with pytest.raises(ConversationNotFound) as caught:
        await conversations.ensure(ALICE, "conv-1", "Let me in")

    assert isinstance(caught.value, StoreError)
    assert caught.value.code == "conversation_not_found"
    assert "tenant-b" not in str(caught.value)
    assert await conversations.get(B_ALICE, "conv-1") == theirs
    assert await conversations.get(ALICE, "conv-1") is None


async def test_racing_ensures_create_one_conversation(conversations: ConversationStore) -> None:
    results = await asyncio.gather(*(a_conversation(conversations) for _ in range(5)))

    assert len(set(results)) == 1
    assert len(await conversations.list(ALICE)) == 1


async def test_a_tenant_cannot_see_another_tenants_conversation(
    conversations: ConversationStore,
) -> None:
    await a_conversation(conversations, tenant_id="tenant-b")
    await conversations.append(B_ALICE, "conv-1", USER, "secret", "run-1")

    assert await conversations.get(ALICE, "conv-1") is None
    assert await conversations.list(ALICE) == []
    assert await conversations.history(ALICE, "conv-1") == []
    assert [m.content for m in await conversations.history(B_ALICE, "conv-1")] == ["secret"]


async def test_history_is_the_last_messages_oldest_first(conversations: ConversationStore) -> None:
    await a_conversation(conversations)
    for turn in range(3):
        await conversations.append(ALICE, "conv-1", USER, f"q{turn}", f"run-{turn}")
        await conversations.append(ALICE, "conv-1", ASSISTANT, f"a{turn}", f"run-{turn}")

    everything = await conversations.history(ALICE, "conv-1")
    last_three = await conversations.history(ALICE, "conv-1", limit=3)

    assert [m.content for m in everything] == ["q0", "a0", "q1", "a1", "q2", "a2"]
    assert [m.content for m in last_three] == ["a1", "q2", "a2"]
    assert [m.role for m in last_three] == [ASSISTANT, USER, ASSISTANT]
    assert [m.run_id for m in last_three] == ["run-1", "run-2", "run-2"]
    assert all(m.created_at.utcoffset() == timedelta(0) for m in everything)
    assert all(m.tenant_id == "tenant-a" for m in everything)


async def test_history_of_an_unknown_conversation_is_empty(
    conversations: ConversationStore,
) -> None:
    assert await conversations.history(ALICE, "nope") == []


async def test_appending_a_runs_message_again_changes_nothing(
    conversations: ConversationStore,
) -> None:
    await a_conversation(conversations)
    await conversations.append(ALICE, "conv-1", USER, "q", "run-1")
    await conversations.append(ALICE, "conv-1", ASSISTANT, "first answer", "run-1")
    before = await conversations.get(ALICE, "conv-1")

    await conversations.append(ALICE, "conv-1", ASSISTANT, "redelivered answer", "run-1")

    history = await conversations.history(ALICE, "conv-1")
    assert [m.content for m in history] == ["q", "first answer"]
    assert await conversations.get(ALICE, "conv-1") == before


async def test_racing_appends_of_the_same_message_store_one(
    conversations: ConversationStore,
) -> None:
    await a_conversation(conversations)

    await asyncio.gather(
        *(conversations.append(ALICE, "conv-1", ASSISTANT, "a", "run-1") for _ in range(5))
    )

    assert len(await conversations.history(ALICE, "conv-1")) == 1


async def test_messages_without_a_run_are_not_deduplicated(
    conversations: ConversationStore,
) -> None:
    await a_conversation(conversations)

    await conversations.append(ALICE, "conv-1", USER, "hello", None)
    await conversations.append(ALICE, "conv-1", USER, "hello", None)

    assert len(await conversations.history(ALICE, "conv-1")) == 2


async def test_append_marks_the_conversation_active(conversations: ConversationStore) -> None:
    older = await a_conversation(conversations, "older")
    await a_conversation(conversations, "newer")
    assert [c.id for c in await conversations.list(ALICE)] == ["newer", "older"]

    await conversations.append(ALICE, "older", USER, "back to this", "run-1")

    listed = await conversations.list(ALICE)
    assert [c.id for c in listed] == ["older", "newer"]
    assert listed[0].updated_at > older.updated_at
    assert listed[0].created_at == older.created_at


async def test_append_to_another_tenants_conversation_is_refused(
    conversations: ConversationStore,
) -> None:
    await a_conversation(conversations, tenant_id="tenant-b")

    with pytest.raises(ConversationNotFound):
        await conversations.append(ALICE, "conv-1", USER, "intrusion", "run-1")
    with pytest.raises(ConversationNotFound):
        await conversations.append(ALICE, "nope", USER, "q", "run-1")

    assert await conversations.history(B_ALICE, "conv-1") == []


async def test_append_refuses_an_unknown_role(conversations: ConversationStore) -> None:
    await a_conversation(conversations)

    with pytest.raises(ValueError, match="system"):
        await conversations.append(ALICE, "conv-1", "system", "q", "run-1")  # type: ignore[arg-type]


async def test_delete_removes_the_conversation_and_its_messages(
    conversations: ConversationStore, superuser_engine: AsyncEngine
) -> None:
    await a_conversation(conversations)
    await a_conversation(conversations, "kept")
    await conversations.append(ALICE, "conv-1", USER, "q", "run-1")
    await conversations.append(ALICE, "conv-1", ASSISTANT, "a", "run-1")
    await conversations.append(ALICE, "kept", USER, "q", "run-2")

    assert await conversations.delete(ALICE, "conv-1") is True

    assert await conversations.get(ALICE, "conv-1") is None
    assert await conversations.history(ALICE, "conv-1") == []
    assert await count_messages(superuser_engine) == 1
    assert await conversations.delete(ALICE, "conv-1") is False


async def test_delete_of_another_tenants_conversation_does_nothing(
    conversations: ConversationStore,
) -> None:
    await a_conversation(conversations, tenant_id="tenant-b")
    await conversations.append(B_ALICE, "conv-1", USER, "q", "run-1")
    theirs = await conversations.get(B_ALICE, "conv-1")

    assert await conversations.delete(ALICE, "conv-1") is False

    assert await conversations.get(B_ALICE, "conv-1") == theirs
    assert len(await conversations.history(B_ALICE, "conv-1")) == 1


async def test_list_is_most_recent_first_and_limited(conversations: ConversationStore) -> None:
    for i in range(4):
        await a_conversation(conversations, f"conv-{i}")
    await a_conversation(conversations, "other", tenant_id="tenant-b")

    assert [c.id for c in await conversations.list(ALICE, limit=2)] == ["conv-3", "conv-2"]
    assert len(await conversations.list(ALICE)) == 4


@pytest.mark.parametrize("limit", [0, -1])
async def test_list_and_history_refuse_a_limit_below_one(
    conversations: ConversationStore, limit: int
) -> None:
    with pytest.raises(ValueError, match="limit"):
        await conversations.list(ALICE, limit=limit)
    with pytest.raises(ValueError, match="limit"):
        await conversations.history(ALICE, "conv-1", limit=limit)


# --- a conversation belongs to the user who started it --------------------------------------


async def test_another_user_of_the_tenant_sees_nothing_and_changes_nothing(
    conversations: ConversationStore,
) -> None:
    await a_conversation(conversations)
    await conversations.append(ALICE, "conv-1", USER, "my secret", "run-1")
    mine = await conversations.get(ALICE, "conv-1")

    assert await conversations.get(BOB, "conv-1") is None
    assert await conversations.list(BOB) == []
    assert await conversations.history(BOB, "conv-1") == []
    with pytest.raises(ConversationNotFound):
        await conversations.ensure(BOB, "conv-1", "continue it")
    with pytest.raises(ConversationNotFound):
        await conversations.append(BOB, "conv-1", USER, "intrusion", "run-2")
    assert await conversations.delete(BOB, "conv-1") is False

    assert await conversations.get(ALICE, "conv-1") == mine
    assert [m.content for m in await conversations.history(ALICE, "conv-1")] == ["my secret"]


async def test_an_admin_reads_every_users_conversation_but_writes_none(
    conversations: ConversationStore,
) -> None:
    await a_conversation(conversations, "alices")
    await conversations.append(ALICE, "alices", USER, "q", "run-1")
    await conversations.ensure(BOB, "bobs", "bob's question")
    await a_conversation(conversations, "elsewhere", tenant_id="tenant-b")

    assert {c.id for c in await conversations.list(ADMIN)} == {"alices", "bobs"}
    seen = await conversations.get(ADMIN, "alices")
    assert seen is not None and seen.subject == "alice"
    assert [m.content for m in await conversations.history(ADMIN, "alices")] == ["q"]
    assert await conversations.get(ADMIN, "elsewhere") is None
    with pytest.raises(ConversationNotFound):
        await conversations.append(ADMIN, "alices", USER, "admin words", "run-9")
    assert await conversations.delete(ADMIN, "alices") is False
    assert len(await conversations.history(ALICE, "alices")) == 1


async def test_probe_tells_free_own_and_foreign_ids_apart_and_writes_nothing(
    conversations: ConversationStore, superuser_engine: AsyncEngine
) -> None:
    mine = await a_conversation(conversations, "mine")
    await a_conversation(conversations, "foreign", tenant_id="tenant-b")
    await conversations.ensure(BOB, "bobs", "q")

    assert await conversations.probe(ALICE, "free") is None
    assert await conversations.probe(ALICE, "mine") == mine
    for scope, taken in ((ALICE, "foreign"), (ALICE, "bobs"), (BOB, "mine")):
        with pytest.raises(ConversationNotFound):
            await conversations.probe(scope, taken)
    seen = await conversations.probe(ADMIN, "bobs")
    assert seen is not None and seen.subject == "bob"

    async with superuser_engine.connect() as conn:
        ids = (await conn.execute(text("SELECT id FROM conversations ORDER BY id"))).scalars()
        assert list(ids) == ["bobs", "foreign", "mine"]  # the probe of "free" left nothing


async def test_rename_folds_the_title_and_only_the_owner_renames(
    conversations: ConversationStore,
) -> None:
    await a_conversation(conversations, "c-rename")
    assert await conversations.rename(B_ALICE, "c-rename", "hijacked") is False
    assert await conversations.rename(BOB, "c-rename", "hijacked") is False
    assert await conversations.rename(ADMIN, "c-rename", "hijacked") is False
    assert await conversations.rename(ALICE, "c-rename", "  A   new\n title  ") is True
    found = await conversations.get(ALICE, "c-rename")
    assert found is not None and found.title == "A new title"
