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
)

USER, ASSISTANT = MessageRole.USER, MessageRole.ASSISTANT


async def a_conversation(
    store: ConversationStore, conversation_id: str = "conv-1", tenant_id: str = "tenant-a"
) -> ConversationRecord:
    return await store.ensure(tenant_id, "alice", conversation_id, "What is a stream?")


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
    assert await conversations.get("tenant-a", "conv-1") == created


async def test_the_title_is_one_line_of_at_most_120_characters(
    conversations: ConversationStore,
) -> None:
    long_question = "Why\n  is   " + "x" * 200

    created = await conversations.ensure("tenant-a", "alice", "conv-1", long_question)
    untitled = await conversations.ensure("tenant-a", "alice", "conv-2", None)

    assert created.title == ("Why is " + "x" * 200)[:120]
    assert untitled.title is None


async def test_ensure_is_idempotent_for_the_same_tenant(conversations: ConversationStore) -> None:
    first = await a_conversation(conversations)

    again = await conversations.ensure("tenant-a", "bob", "conv-1", "A different question")

    assert again == first
    assert [c.id for c in await conversations.list("tenant-a")] == ["conv-1"]


async def test_ensure_refuses_another_tenants_conversation(
    conversations: ConversationStore,
) -> None:
    theirs = await a_conversation(conversations, tenant_id="tenant-b")

    with pytest.raises(ConversationNotFound) as caught:
        await conversations.ensure("tenant-a", "alice", "conv-1", "Let me in")

    assert isinstance(caught.value, StoreError)
    assert caught.value.code == "conversation_not_found"
    assert "tenant-b" not in str(caught.value)
    assert await conversations.get("tenant-b", "conv-1") == theirs
    assert await conversations.get("tenant-a", "conv-1") is None


async def test_racing_ensures_create_one_conversation(conversations: ConversationStore) -> None:
    results = await asyncio.gather(*(a_conversation(conversations) for _ in range(5)))

    assert len(set(results)) == 1
    assert len(await conversations.list("tenant-a")) == 1


async def test_a_tenant_cannot_see_another_tenants_conversation(
    conversations: ConversationStore,
) -> None:
    await a_conversation(conversations, tenant_id="tenant-b")
    await conversations.append("tenant-b", "conv-1", USER, "secret", "run-1")

    assert await conversations.get("tenant-a", "conv-1") is None
    assert await conversations.list("tenant-a") == []
    assert await conversations.history("tenant-a", "conv-1") == []
    assert [m.content for m in await conversations.history("tenant-b", "conv-1")] == ["secret"]


async def test_history_is_the_last_messages_oldest_first(conversations: ConversationStore) -> None:
    await a_conversation(conversations)
    for turn in range(3):
        await conversations.append("tenant-a", "conv-1", USER, f"q{turn}", f"run-{turn}")
        await conversations.append("tenant-a", "conv-1", ASSISTANT, f"a{turn}", f"run-{turn}")

    everything = await conversations.history("tenant-a", "conv-1")
    last_three = await conversations.history("tenant-a", "conv-1", limit=3)

    assert [m.content for m in everything] == ["q0", "a0", "q1", "a1", "q2", "a2"]
    assert [m.content for m in last_three] == ["a1", "q2", "a2"]
    assert [m.role for m in last_three] == [ASSISTANT, USER, ASSISTANT]
    assert [m.run_id for m in last_three] == ["run-1", "run-2", "run-2"]
    assert all(m.created_at.utcoffset() == timedelta(0) for m in everything)
    assert all(m.tenant_id == "tenant-a" for m in everything)


async def test_history_of_an_unknown_conversation_is_empty(
    conversations: ConversationStore,
) -> None:
    assert await conversations.history("tenant-a", "nope") == []


async def test_appending_a_runs_message_again_changes_nothing(
    conversations: ConversationStore,
) -> None:
    await a_conversation(conversations)
    await conversations.append("tenant-a", "conv-1", USER, "q", "run-1")
    await conversations.append("tenant-a", "conv-1", ASSISTANT, "first answer", "run-1")
    before = await conversations.get("tenant-a", "conv-1")

    await conversations.append("tenant-a", "conv-1", ASSISTANT, "redelivered answer", "run-1")

    history = await conversations.history("tenant-a", "conv-1")
    assert [m.content for m in history] == ["q", "first answer"]
    assert await conversations.get("tenant-a", "conv-1") == before


async def test_racing_appends_of_the_same_message_store_one(
    conversations: ConversationStore,
) -> None:
    await a_conversation(conversations)

    await asyncio.gather(
        *(conversations.append("tenant-a", "conv-1", ASSISTANT, "a", "run-1") for _ in range(5))
    )

    assert len(await conversations.history("tenant-a", "conv-1")) == 1


async def test_messages_without_a_run_are_not_deduplicated(
    conversations: ConversationStore,
) -> None:
    await a_conversation(conversations)

    await conversations.append("tenant-a", "conv-1", USER, "hello", None)
    await conversations.append("tenant-a", "conv-1", USER, "hello", None)

    assert len(await conversations.history("tenant-a", "conv-1")) == 2


async def test_append_marks_the_conversation_active(conversations: ConversationStore) -> None:
    older = await a_conversation(conversations, "older")
    await a_conversation(conversations, "newer")
    assert [c.id for c in await conversations.list("tenant-a")] == ["newer", "older"]

    await conversations.append("tenant-a", "older", USER, "back to this", "run-1")

    listed = await conversations.list("tenant-a")
    assert [c.id for c in listed] == ["older", "newer"]
    assert listed[0].updated_at > older.updated_at
    assert listed[0].created_at == older.created_at


async def test_append_to_another_tenants_conversation_is_refused(
    conversations: ConversationStore,
) -> None:
    await a_conversation(conversations, tenant_id="tenant-b")

    with pytest.raises(ConversationNotFound):
        await conversations.append("tenant-a", "conv-1", USER, "intrusion", "run-1")
    with pytest.raises(ConversationNotFound):
        await conversations.append("tenant-a", "nope", USER, "q", "run-1")

    assert await conversations.history("tenant-b", "conv-1") == []


async def test_append_refuses_an_unknown_role(conversations: ConversationStore) -> None:
    await a_conversation(conversations)

    with pytest.raises(ValueError, match="system"):
        await conversations.append("tenant-a", "conv-1", "system", "q", "run-1")  # type: ignore[arg-type]


async def test_delete_removes_the_conversation_and_its_messages(
    conversations: ConversationStore, engine: AsyncEngine
) -> None:
    await a_conversation(conversations)
    await a_conversation(conversations, "kept")
    await conversations.append("tenant-a", "conv-1", USER, "q", "run-1")
    await conversations.append("tenant-a", "conv-1", ASSISTANT, "a", "run-1")
    await conversations.append("tenant-a", "kept", USER, "q", "run-2")

    assert await conversations.delete("tenant-a", "conv-1") is True

    assert await conversations.get("tenant-a", "conv-1") is None
    assert await conversations.history("tenant-a", "conv-1") == []
    assert await count_messages(engine) == 1
    assert await conversations.delete("tenant-a", "conv-1") is False


async def test_delete_of_another_tenants_conversation_does_nothing(
    conversations: ConversationStore,
) -> None:
    await a_conversation(conversations, tenant_id="tenant-b")
    await conversations.append("tenant-b", "conv-1", USER, "q", "run-1")
    theirs = await conversations.get("tenant-b", "conv-1")

    assert await conversations.delete("tenant-a", "conv-1") is False

    assert await conversations.get("tenant-b", "conv-1") == theirs
    assert len(await conversations.history("tenant-b", "conv-1")) == 1


async def test_list_is_most_recent_first_and_limited(conversations: ConversationStore) -> None:
    for i in range(4):
        await a_conversation(conversations, f"conv-{i}")
    await a_conversation(conversations, "other", tenant_id="tenant-b")

    assert [c.id for c in await conversations.list("tenant-a", limit=2)] == ["conv-3", "conv-2"]
    assert len(await conversations.list("tenant-a")) == 4


@pytest.mark.parametrize("limit", [0, -1])
async def test_list_and_history_refuse_a_limit_below_one(
    conversations: ConversationStore, limit: int
) -> None:
    with pytest.raises(ValueError, match="limit"):
        await conversations.list("tenant-a", limit=limit)
    with pytest.raises(ValueError, match="limit"):
        await conversations.history("tenant-a", "conv-1", limit=limit)


async def test_rename_folds_the_title_and_stays_inside_the_tenant(
    conversations: ConversationStore,
) -> None:
    await conversations.ensure("t1", "alice", "c-rename", "first question")
    assert await conversations.rename("t2", "c-rename", "hijacked") is False
    assert await conversations.rename("t1", "c-rename", "  A   new\n title  ") is True
    found = await conversations.get("t1", "c-rename")
    assert found is not None and found.title == "A new title"
