"""``GET /conversations/{id}`` shows what the model is given of the active branch: the
summary its older turns were folded into, and the messages after it."""

from __future__ import annotations

from typing import Any

from agentbus_contracts import ConversationDetail
from agents.llm.scripted import ScriptedLLM
from bus.store import Scope
from tests.integration.agents.test_long_conversations import Conversationalist, question
from tests.integration.api.conftest import StartApi
from tests.integration.api.test_branches import answered, detail

ALICE = Scope.user("t1", "alice")
WINDOW: dict[str, Any] = {"llm_context_tokens": 2048}


async def test_the_detail_shows_the_summary_and_the_messages_after_it_on_the_active_branch(
    start_api: StartApi, store_backend: dict[str, Any]
) -> None:
    api = await start_api(ScriptedLLM(Conversationalist(), record=False), **WINDOW, **store_backend)
    key = await api.key()
    first = await answered(api, key, question(0))
    conversation = first["conversation_id"]
    for i in range(1, 6):
        await answered(api, key, question(i), conversation)

    found = await detail(api, key, conversation)

    assert api.stores.summaries is not None
    [*_, newest] = await api.stores.summaries.list(ALICE, conversation)
    context = found["context"]
    assert context["summary"]["content"] == newest.content
    assert context["summary"]["through_message_id"] == newest.through_message_id
    assert context["summary"]["messages"] == newest.messages
    after = [m for m in found["messages"] if m["id"] > newest.through_message_id]
    assert [m["id"] for m in context["messages"]] == [m["id"] for m in after]
    assert context["messages"][0]["role"] == "user"  # whole turns
    assert ConversationDetail.model_validate(found).context is not None  # the client reads it

    # A branch from the first answer: the active branch no longer goes through the newest
    # summary; only a summary of the first turn alone (if one was made) still applies.
    first_answer = next(m for m in found["tree"] if m["role"] == "assistant")
    await answered(api, key, "Fact 1, edited.", conversation, parent_message_id=first_answer["id"])
    branched = (await detail(api, key, conversation))["context"]
    on_branch = [
        s
        for s in await api.stores.summaries.list(ALICE, conversation)
        if s.through_message_id <= first_answer["id"]
    ]
    assert newest.through_message_id > first_answer["id"]
    if on_branch:
        assert branched["summary"]["through_message_id"] == on_branch[-1].through_message_id
        assert [m["content"] for m in branched["messages"]][:1] == ["Fact 1, edited."]
    else:
        assert branched["summary"] is None
        assert [m["content"] for m in branched["messages"]][:3] == [
            question(0),
            first_answer["content"],
            "Fact 1, edited.",
        ]
