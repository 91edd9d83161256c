"""Edit and branch over REST: ``parent_message_id`` makes the conversation a tree.

The model's history follows the branch the question continues; ``GET /conversations/{id}``
returns the active branch and the whole tree; ``PUT .../active`` picks a branch; a branch is
a run like any other (its owner, its audit).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agents.llm.ports import ChatMessage, LLMOptions, ToolDefinition
from agents.llm.scripted import ScriptedLLM, text, turn
from bus.store import KeyRole
from tests.integration.api.conftest import Api, StartApi
from tests.integration.api.test_multitask import ended


def echo(
    messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
) -> list[Any]:
    first = messages[0].content if messages and messages[0].role == "system" else ""
    question = next(m.content for m in reversed(messages) if m.role == "user")
    if "Rewrite the user's last message" in first:
        return turn(text(question))
    asked = [m.content for m in messages[1:-1] if m.role == "user"]
    return turn(text(f"A[{question}] saw[{'|'.join(asked)}]"))


async def ask(api: Api, key: str, question: str, conversation: str | None = None, **more: Any):  # type: ignore[no-untyped-def]
    body: dict[str, Any] = {"question": question, **more}
    if conversation:
        body["conversation_id"] = conversation
    resp = await api.http.post("/api/v1/runs", json=body, headers=api.auth(key))
    return resp


async def answered(
    api: Api, key: str, question: str, conversation: str | None = None, **more: Any
) -> dict[str, Any]:
    resp = await ask(api, key, question, conversation, **more)
    assert resp.status_code == 202, resp.text
    started = resp.json()
    run = await ended(api, key, started["run_id"])
    return run | {"conversation_id": started["conversation_id"]}


async def detail(api: Api, key: str, conversation: str) -> dict[str, Any]:
    resp = await api.http.get(f"/api/v1/conversations/{conversation}", headers=api.auth(key))
    assert resp.status_code == 200, resp.text
    return resp.json()


def answer_of(found: dict[str, Any], run_id: str) -> dict[str, Any]:
    return next(m for m in found["tree"] if m["run_id"] == run_id and m["role"] == "assistant")


async def test_an_edited_question_branches_and_the_history_follows_the_branch(
    start_api: StartApi,
) -> None:
    api = await start_api(ScriptedLLM(echo, record=False))
    key = await api.key()
    q1 = await answered(api, key, "q1")
    conversation = q1["conversation_id"]
    q2 = await answered(api, key, "q2", conversation)
    a1 = answer_of(await detail(api, key, conversation), q1["id"])

    edited = await answered(api, key, "q2 edited", conversation, parent_message_id=a1["id"])
    after = await answered(api, key, "q3", conversation)
    found = await detail(api, key, conversation)

    assert q2["answer"] == "A[q2] saw[q1]"
    assert edited["answer"] == "A[q2 edited] saw[q1]"  # q2 is on another branch
    assert after["answer"] == "A[q3] saw[q1|q2 edited]"  # the new branch is the active one
    assert [m["content"] for m in found["messages"] if m["role"] == "user"] == [
        "q1",
        "q2 edited",
        "q3",
    ]
    users = [m for m in found["tree"] if m["role"] == "user"]
    assert [m["content"] for m in users] == ["q1", "q2", "q2 edited", "q3"]
    siblings = [m["content"] for m in users if m["parent_id"] == a1["id"]]
    assert siblings == ["q2", "q2 edited"]
    assert found["conversation"]["active_message_id"] == found["messages"][-1]["id"]


async def test_regenerate_from_the_start_and_choose_a_branch_to_continue(
    start_api: StartApi,
) -> None:
    api = await start_api(ScriptedLLM(echo, record=False))
    key = await api.key()
    q1 = await answered(api, key, "q1")
    conversation = q1["conversation_id"]
    q2 = await answered(api, key, "q2", conversation)
    again = await answered(api, key, "q1", conversation, parent_message_id=0)
    before = await detail(api, key, conversation)
    q2_user = next(m for m in before["tree"] if m["run_id"] == q2["id"] and m["role"] == "user")

    chosen = await api.http.put(
        f"/api/v1/conversations/{conversation}/active",
        json={"message_id": q2_user["id"]},
        headers=api.auth(key),
    )
    continued = await answered(api, key, "q3", conversation)

    assert again["answer"] == "A[q1] saw[]"
    assert [m["run_id"] for m in before["messages"]] == [again["id"], again["id"]]
    assert chosen.status_code == 200, chosen.text
    assert [m["content"] for m in chosen.json()["messages"]] == [
        "q1",
        "A[q1] saw[]",
        "q2",
        "A[q2] saw[q1]",
    ]
    assert continued["answer"] == "A[q3] saw[q1|q2]"


async def test_a_parent_must_be_an_answer_of_the_callers_conversation(
    start_api: StartApi,
) -> None:
    api = await start_api(ScriptedLLM(echo, record=False))
    alice, bob = await api.key(subject="alice"), await api.key(subject="bob")
    admin = await api.key(subject="root", role=KeyRole.ADMIN)
    mine = await answered(api, alice, "q1")
    other = await answered(api, alice, "elsewhere")
    found = await detail(api, alice, mine["conversation_id"])
    question = next(m for m in found["tree"] if m["role"] == "user")
    foreign = answer_of(await detail(api, alice, other["conversation_id"]), other["id"])
    cid = mine["conversation_id"]

    user_message = await ask(api, alice, "x", cid, parent_message_id=question["id"])
    elsewhere = await ask(api, alice, "x", cid, parent_message_id=foreign["id"])
    no_conversation = await ask(api, alice, "x", None, parent_message_id=foreign["id"])
    bobs = await ask(api, bob, "x", cid, parent_message_id=answer_of(found, mine["id"])["id"])
    admins = await ask(api, admin, "x", cid, parent_message_id=answer_of(found, mine["id"])["id"])
    bob_picks = await api.http.put(
        f"/api/v1/conversations/{cid}/active",
        json={"message_id": question["id"]},
        headers=api.auth(bob),
    )

    for refused in (user_message, elsewhere, no_conversation):
        assert refused.status_code == 422, refused.text
        assert refused.json()["error"]["field"] == "parent_message_id"
    assert bobs.status_code == 404 and bobs.json()["error"]["code"] == "conversation_not_found"
    assert admins.status_code == 403 and admins.json()["error"]["code"] == "not_owner"
    assert bob_picks.status_code == 404
    runs = (await api.http.get("/api/v1/runs", headers=api.auth(alice))).json()["runs"]
    assert len(runs) == 2  # nothing refused left a run behind
