"""A second question while the conversation still answers the first: the ``multitask`` policy.

``enqueue`` (the default) starts it when the running one ends, and it sees that answer;
``reject`` is a 409 ``conversation_busy`` that writes nothing; ``interrupt`` cancels the
running run, keeps its partial answer marked ``interrupted`` and the new question sees it;
``rollback`` cancels it and removes it from the history. Each over REST and the websocket,
``enqueue`` and ``reject`` on ``runs.questions`` and the OpenAI-compatible endpoint, with
the per-question setting and the tenant's (``interrupt`` and ``rollback`` on every other
entry point: ``test_multitask_entry_points.py``).
"""

from __future__ import annotations

import asyncio
import json

import pytest

from api.app import turn_publisher
from api.app.turn_publisher import TurnPublisher
from api.streams.run_publishing import RedisTurnPublishing
from bus import keys
from bus.commands import RunResult
from bus.store import KeyRole
from bus.store.turn_types import Turn
from tests.integration.api.conftest import StartApi, recv
from tests.integration.api.multitask import (
    PADDING,
    ended,
    events_of,
    first_run_streaming,
    messages,
    post,
    release_once_cut,
    release_once_queued,
    run_of,
    said,
    slow_model,
    until_event,
)
from tests.support import wait_for


async def test_enqueue_is_the_default_and_runs_the_second_after_the_first_seeing_its_answer(
    start_api: StartApi,
) -> None:
    api = await start_api(model := slow_model())
    key = await api.key()
    q1, conversation = await first_run_streaming(api, key)

    resp = await post(api, key, "q2", conversation)
    second = resp.json()
    waiting = (await run_of(api, key, second["run_id"]))["status"]
    pending = (
        await api.http.get(f"/api/v1/conversations/{conversation}", headers=api.auth(key))
    ).json()["pending"]
    model.release()
    first_run, second_run = await ended(api, key, q1), await ended(api, key, second["run_id"])

    assert resp.status_code == 202 and second["queued"] is True and second["ahead"] == 1
    assert waiting == "queued"
    assert [(p["run_id"], p["state"]) for p in pending] == [
        (q1, "running"),
        (second["run_id"], "queued"),
    ]
    assert first_run["status"] == second_run["status"] == "done"
    q2_started = next(e for e in await events_of(api, second["run_id"]))
    q1_done = [e for e in await events_of(api, q1) if e["type"] == "done"]
    assert q2_started["type"] == "run_started" and len(q1_done) == 1
    assert second_run["answer"].startswith("A[q2] saw[q1]")  # it saw the first turn
    assert said(await messages(api, key, conversation)) == [
        ("user", "q1", None),
        ("assistant", "A[q1] saw[]", None),
        ("user", "q2", None),
        ("assistant", "A[q2] saw[q1]", None),
    ]


async def test_reject_answers_409_conversation_busy_and_writes_nothing(
    start_api: StartApi,
) -> None:
    api = await start_api(model := slow_model())
    key = await api.key()
    q1, conversation = await first_run_streaming(api, key)
    runs_before = (await api.http.get("/api/v1/runs", headers=api.auth(key))).json()["runs"]

    resp = await post(api, key, "q2", conversation, multitask="reject")
    model.release()
    await ended(api, key, q1)
    runs_after = (await api.http.get("/api/v1/runs", headers=api.auth(key))).json()["runs"]

    assert resp.status_code == 409
    assert resp.json()["error"]["code"] == "conversation_busy"
    assert [r["id"] for r in runs_after] == [r["id"] for r in runs_before] == [q1]
    assert said(await messages(api, key, conversation)) == [
        ("user", "q1", None),
        ("assistant", "A[q1] saw[]", None),
    ]
    # Once the conversation is idle, a rejecting question runs at once.
    idle = await post(api, key, "q3", conversation, multitask="reject")
    assert idle.status_code == 202 and idle.json()["queued"] is False
    assert (await ended(api, key, idle.json()["run_id"]))["status"] == "done"


async def test_interrupt_keeps_the_partial_answer_marked_and_the_new_question_sees_it(
    start_api: StartApi,
) -> None:
    api = await start_api(model := slow_model())
    key = await api.key()
    q1, conversation = await first_run_streaming(api, key)

    second = (await post(api, key, "q2", conversation, multitask="interrupt")).json()
    await release_once_cut(api, model, q1)
    first_run, second_run = await ended(api, key, q1), await ended(api, key, second["run_id"])
    found = await messages(api, key, conversation)

    assert second["queued"] is True
    assert first_run["status"] == "cancelled" and second_run["status"] == "done"
    assert second_run["answer"].startswith("A[q2] saw[q1] cut")
    assert [(m["role"], m.get("status")) for m in found] == [
        ("user", None),
        ("assistant", "interrupted"),
        ("user", None),
        ("assistant", None),
    ]
    partial = found[1]["content"]
    assert partial.startswith("A[q1]") and len(partial) < len("A[q1] saw[]" + " ." * PADDING)


async def test_rollback_removes_the_running_run_from_the_history(start_api: StartApi) -> None:
    api = await start_api(model := slow_model())
    key = await api.key()
    q1, conversation = await first_run_streaming(api, key)

    second = (await post(api, key, "q2", conversation, multitask="rollback")).json()
    await release_once_cut(api, model, q1)
    first_run, second_run = await ended(api, key, q1), await ended(api, key, second["run_id"])

    assert first_run["status"] == "cancelled" and second_run["status"] == "done"
    assert second_run["answer"].startswith("A[q2] saw[]")  # q1 is gone from its history
    assert said(await messages(api, key, conversation)) == [
        ("user", "q2", None),
        ("assistant", "A[q2] saw[]", None),
    ]


async def test_the_tenants_policy_applies_when_the_question_sets_none(
    start_api: StartApi,
) -> None:
    api = await start_api(model := slow_model())
    admin, key = await api.key(role=KeyRole.ADMIN, subject="root"), await api.key()
    put = await api.http.put(
        "/api/v1/settings", json={"multitask": "reject"}, headers=api.auth(admin)
    )
    assert put.status_code == 200 and put.json()["effective"]["multitask"] == "reject"
    _q1, conversation = await first_run_streaming(api, key)

    refused = await post(api, key, "q2", conversation)
    overridden = await post(api, key, "q3", conversation, multitask="enqueue")
    model.release()

    assert refused.status_code == 409 and refused.json()["error"]["code"] == "conversation_busy"
    assert overridden.status_code == 202 and overridden.json()["queued"] is True
    assert (await ended(api, key, overridden.json()["run_id"]))["answer"].startswith(
        "A[q3] saw[q1]"
    )


async def test_another_users_conversation_id_is_not_found_even_while_busy(
    start_api: StartApi,
) -> None:
    api = await start_api(model := slow_model())
    alice, bob = await api.key(subject="alice"), await api.key(subject="bob")
    _, conversation = await first_run_streaming(api, alice)

    resp = await post(api, bob, "mine?", conversation)
    model.release()

    assert resp.status_code == 404 and resp.json()["error"]["code"] == "conversation_not_found"


@pytest.mark.parametrize("policy", ["enqueue", "reject", "interrupt", "rollback"])
async def test_each_policy_over_the_websocket(start_api: StartApi, policy: str) -> None:
    api = await start_api(model := slow_model())
    key = await api.key()
    ws = await api.ws(key)
    await ws.send(json.dumps({"type": "ask", "question": "q1", "request_id": "r1"}))
    accepted = await recv(ws)
    q1, conversation = accepted["run_id"], accepted["conversation_id"]
    await until_event(api, q1, "answer")

    ask = {
        "type": "ask",
        "question": "q2",
        "conversation_id": conversation,
        "settings": {"multitask": policy},
        "request_id": "r2",
    }
    await ws.send(json.dumps(ask))
    frame = await recv(ws)
    while frame.get("request_id") != "r2":  # q1's events interleave
        frame = await recv(ws)
    if policy in ("interrupt", "rollback"):
        await release_once_cut(api, model, q1)
    model.release()

    if policy == "reject":
        assert frame["type"] == "request_error" and frame["code"] == "conversation_busy"
        assert (await ended(api, key, q1))["status"] == "done"
        assert len(await messages(api, key, conversation)) == 2
        return
    assert frame["type"] == "accepted" and frame["queued"] is True
    second = await ended(api, key, frame["run_id"])
    first = await ended(api, key, q1)
    expected = {
        "enqueue": ("done", "A[q2] saw[q1]"),
        "interrupt": ("cancelled", "A[q2] saw[q1] cut"),
        "rollback": ("cancelled", "A[q2] saw[]"),
    }[policy]
    assert first["status"] == expected[0] and second["status"] == "done"
    assert second["answer"].split(" .")[0] == expected[1]
    # The socket relays the queued run's events once it starts, ending with its `done`.
    async with asyncio.timeout(20):
        while True:
            got = await recv(ws)
            if got.get("run_id") == frame["run_id"] and got["type"] == "done":
                break


async def test_a_question_on_runs_questions_waits_its_turn_and_replies(
    start_api: StartApi,
) -> None:
    api = await start_api(model := slow_model())
    key = await api.key()
    q1, conversation = await first_run_streaming(api, key)
    entries = [
        {"api_key": key, "question": "q2", "conversation_id": conversation, "reply_to": "crm"},
        {
            "api_key": key,
            "question": "q3",
            "conversation_id": conversation,
            "reply_to": "crm",
            "settings": {"multitask": "reject"},
        },
    ]
    for entry in entries:
        await api.redis.xadd(keys.QUESTIONS_STREAM, {"data": json.dumps(entry)})

    async def refused_one() -> bool:  # q3, refused as the conversation is busy
        return await api.redis.xlen("crm") >= 1

    await wait_for(refused_one, within=20)
    await release_once_queued(api, key, conversation, model)

    async def replied() -> bool:
        return await api.redis.xlen("crm") >= 2

    await wait_for(replied, within=40)
    rows = await api.redis.xrange("crm")
    results = [RunResult.model_validate_json(fields[b"data"]) for _, fields in rows]

    assert (await ended(api, key, q1))["status"] == "done"
    refused = [r for r in results if r.status == "rejected"]
    done = [r for r in results if r.status == "done"]
    assert [r.stop_reason for r in refused] == ["conversation_busy"]
    assert len(done) == 1 and (done[0].answer or "").startswith("A[q2] saw[q1]")


async def test_the_openai_endpoint_waits_its_turn_or_refuses(start_api: StartApi) -> None:
    api = await start_api(model := slow_model())
    key = await api.key()
    q1, conversation = await first_run_streaming(api, key)
    body = {"model": "agentbus", "messages": [{"role": "user", "content": "q2"}]}
    headers = api.auth(key) | {"X-Agentbus-Conversation": conversation}

    refused = await api.http.post(
        "/v1/chat/completions", json=body, headers=headers | {"X-Agentbus-Multitask": "reject"}
    )
    waiting = asyncio.create_task(
        api.http.post("/v1/chat/completions", json=body, headers=headers, timeout=60)
    )
    await release_once_queued(api, key, conversation, model)
    waited = await waiting
    bad = await api.http.post(
        "/v1/chat/completions", json=body, headers=headers | {"X-Agentbus-Multitask": "later"}
    )

    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "conversation_busy"
    assert waited.status_code == 200, waited.text
    content = waited.json()["choices"][0]["message"]["content"]
    assert content.startswith("A[q2] saw[q1]")
    assert (await run_of(api, key, q1))["status"] == "done"
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "X-Agentbus-Multitask"


async def test_a_promotion_whose_publish_was_lost_is_published_by_the_sweeper_once(
    start_api: StartApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    api = await start_api(model := slow_model())
    key = await api.key()
    q1, conversation = await first_run_streaming(api, key)
    second = (await post(api, key, "q2", conversation)).json()
    lost: list[str] = []

    async def crash_before_publishing(self: TurnPublisher, turn: Turn) -> None:
        lost.append(turn.run_id)  # the promotion committed; the process died before XADD

    monkeypatch.setattr(TurnPublisher, "publish", crash_before_publishing)
    model.release()
    assert (await ended(api, key, q1))["status"] == "done"
    await asyncio.sleep(1)
    stuck = await run_of(api, key, second["run_id"])
    monkeypatch.undo()
    monkeypatch.setattr(turn_publisher, "UNSTARTED_GRACE_S", 0.0)
    assert api.stores.turns is not None
    sweeper = TurnPublisher(RedisTurnPublishing(api.redis), api.stores.turns)
    swept = await sweeper.sweep()
    again = await sweeper.sweep()  # a second sweep (another replica) publishes it again: a no-op
    run = await ended(api, key, second["run_id"])

    assert lost == [second["run_id"]] and stuck["status"] == "queued"
    assert swept >= 1 and again >= 0
    assert run["status"] == "done" and run["answer"].startswith("A[q2] saw[q1]")
    events = await events_of(api, second["run_id"])
    assert [e["type"] for e in events].count("run_started") == 1
    assert [e["type"] for e in events].count("done") == 1
