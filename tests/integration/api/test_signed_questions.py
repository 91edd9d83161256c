"""Signed questions on runs.questions: a key id and an HMAC instead of the key itself."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import Any

from agents.llm.scripted import BENCHMARK_ANSWER
from bus import keys
from bus.store import KeyRole
from tests.integration.api.conftest import StartApi
from tests.integration.api.test_admission import questions_gone, redis_holding, reply


async def new_key(api: Any) -> dict[str, Any]:
    """A user key of t1 made through the API: its id, the key and its signing secret."""
    admin = await api.key("t1", "root", KeyRole.ADMIN)
    resp = await api.http.post("/api/v1/keys", json={"subject": "crm"}, headers=api.auth(admin))
    assert resp.status_code == 201, resp.text
    return resp.json()


def signed(secret: str, **question: Any) -> dict[str, str]:
    """The stream fields of a signed question, as a publisher builds them."""
    data = json.dumps(question)
    signature = hmac.new(secret.encode(), data.encode(), hashlib.sha256).hexdigest()
    return {"data": data, "signature": signature}


async def test_a_signed_question_runs_without_its_key_ever_on_the_bus(start_api: StartApi) -> None:
    api = await start_api()
    made = await new_key(api)
    fields = signed(
        made["signing_secret"],
        key_id=made["id"],
        signed_at=int(time.time()),
        question="What is 23 × 19?",
        reply_to="crm.answers",
    )

    await api.redis.xadd(keys.QUESTIONS_STREAM, {**fields})

    [result] = await reply(api, "crm.answers")
    assert (result.status, result.answer, result.tenant_id) == ("done", BENCHMARK_ANSWER, "t1")
    await questions_gone(api.redis)
    for secret in (made["key"], made["signing_secret"]):
        assert await redis_holding(api.redis, secret.encode()) == []


async def test_bad_signatures_stale_and_replayed_entries_are_refused_and_deleted(
    start_api: StartApi,
) -> None:
    api = await start_api()
    made = await new_key(api)
    other = await new_key(api)
    revoked = await new_key(api)
    admin = await api.key("t1", "root2", KeyRole.ADMIN)
    assert (
        await api.http.delete(f"/api/v1/keys/{revoked['id']}", headers=api.auth(admin))
    ).is_success
    now = int(time.time())
    good = signed(
        made["signing_secret"], key_id=made["id"], signed_at=now, question="q", reply_to="r"
    )
    tampered = {**good, "data": good["data"].replace('"q"', '"another question"')}
    entries = [
        good,
        good,  # the same signed bytes again: a replay
        tampered,
        signed(
            other["signing_secret"], key_id=made["id"], signed_at=now, question="q", reply_to="r"
        ),
        {"data": good["data"]},  # no signature field
        signed(
            made["signing_secret"],
            key_id=made["id"],
            signed_at=now - 3600,
            question="q",
            reply_to="r",
        ),
        signed(
            made["signing_secret"],
            key_id=made["id"],
            signed_at=now + 3600,
            question="q",
            reply_to="r",
        ),
        signed(
            revoked["signing_secret"],
            key_id=revoked["id"],
            signed_at=now,
            question="q",
            reply_to="r",
        ),
        signed(
            made["signing_secret"],
            api_key=made["key"],
            key_id=made["id"],
            signed_at=now,
            question="q",
            reply_to="r",
        ),
    ]
    for fields in entries:
        await api.redis.xadd(keys.QUESTIONS_STREAM, {**fields})

    results = await reply(api, "r", count=len(entries))

    assert sorted((r.status, r.stop_reason) for r in results) == sorted(
        [
            ("done", None),
            ("rejected", "signature_replayed"),
            ("rejected", "unauthorized"),  # tampered
            ("rejected", "unauthorized"),  # another key's secret
            ("rejected", "unauthorized"),  # unsigned
            ("rejected", "signature_expired"),
            ("rejected", "signature_expired"),
            ("rejected", "unauthorized"),  # revoked
            ("rejected", "invalid_question"),  # a key and a key id
        ]
    )
    await questions_gone(api.redis)
    assert await redis_holding(api.redis, made["key"].encode()) == []
