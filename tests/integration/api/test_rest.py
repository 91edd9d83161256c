"""REST under /api/v1 against a real server: runs, SSE, idempotency, limits, errors."""

from __future__ import annotations

import asyncio
import json
import math
import time
from typing import Any

from agents.llm.scripted import BENCHMARK_ANSWER, ScriptedLLM
from bus import keys
from bus.commands import AgentTask
from bus.store import KeyRole
from tests.integration.api.conftest import Api, StartApi
from tests.support import narrow, stream_commands


async def wait_status(api: Api, key: str, run_id: str, within: float = 20) -> dict[str, Any]:
    async with asyncio.timeout(within):
        while True:
            run = (await api.http.get(f"/api/v1/runs/{run_id}", headers=api.auth(key))).json()
            if run["status"] not in ("queued", "running"):
                return run
            await asyncio.sleep(0.05)


async def sse(
    api: Api, key: str, run_id: str, last_event_id: str | None = None
) -> list[dict[str, Any]]:
    headers = api.auth(key) | ({"Last-Event-ID": last_event_id} if last_event_id else {})
    events = []
    async with api.http.stream("GET", f"/api/v1/runs/{run_id}/events", headers=headers) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        event_id = None
        async for line in resp.aiter_lines():
            if line.startswith("id: "):
                event_id = line[4:]
            elif line.startswith("data: "):
                doc = json.loads(line[6:])
                assert doc.get("id", event_id) == event_id
                events.append(doc)
    return events


async def test_post_a_run_then_read_it_and_follow_its_events(start_api: StartApi) -> None:
    api = await start_api()
    key = await api.key()

    resp = await api.http.post("/api/v1/runs", json={"question": "23 × 19?"}, headers=api.auth(key))
    accepted = resp.json()
    events = await sse(api, key, accepted["run_id"])
    run = await wait_status(api, key, accepted["run_id"])
    listed = (await api.http.get("/api/v1/runs", headers=api.auth(key))).json()

    assert resp.status_code == 202 and resp.headers["location"].endswith(accepted["run_id"])
    assert events[0]["type"] == "run_started" and events[-1]["type"] == "done"
    assert run["answer"] == BENCHMARK_ANSWER and run["trace"] and run["usage"]
    assert [r["id"] for r in listed["runs"]] == [accepted["run_id"]]
    resumed = await sse(api, key, accepted["run_id"], last_event_id=events[1]["id"])
    assert [e["id"] for e in resumed] == [e["id"] for e in events[2:]]


async def test_an_idempotency_key_returns_the_same_run(start_api: StartApi) -> None:
    api = await start_api()
    key = await api.key()
    headers = api.auth(key) | {"Idempotency-Key": "order-42"}
    body = {"question": "23 × 19?"}

    first = await api.http.post("/api/v1/runs", json=body, headers=headers)
    again = await api.http.post("/api/v1/runs", json=body, headers=headers)
    other = await api.http.post("/api/v1/runs", json={"question": "other"}, headers=headers)

    assert first.status_code == again.status_code == 202
    assert again.json()["run_id"] == first.json()["run_id"] and again.json()["replayed"]
    assert other.status_code == 409 and other.json()["error"]["code"] == "idempotency_key_reused"
    assert len(await stream_commands(api.redis, keys.Role.INTAKE)) == 1


async def test_the_concurrent_run_quota_answers_429_until_a_run_ends(start_api: StartApi) -> None:
    api = await start_api(ScriptedLLM(token_delay=0.02), api_max_active_runs=1)
    key = await api.key()
    ask = {"question": "23 × 19?"}

    first = await api.http.post("/api/v1/runs", json=ask, headers=api.auth(key))
    refused = await api.http.post("/api/v1/runs", json=ask, headers=api.auth(key))
    # The slot is given back before `done` is written (the store's status may say done a
    # moment earlier), so a client that saw `done` can start its next run at once.
    await sse(api, key, first.json()["run_id"])
    later = await api.http.post("/api/v1/runs", json=ask, headers=api.auth(key))

    assert first.status_code == 202
    assert refused.status_code == 429 and 1 <= int(refused.headers["retry-after"]) <= 5
    assert refused.json()["error"]["code"] == "too_many_active_runs"
    assert later.status_code == 202  # the run-end hook gave the slot back


async def test_the_rate_limit_answers_429_with_retry_after(start_api: StartApi) -> None:
    api = await start_api(api_rate_per_minute=6, api_rate_burst=2)
    key = await api.key()
    started = time.monotonic()
    codes = [
        (await api.http.post("/api/v1/runs", json={"question": "q"}, headers=api.auth(key)))
        for _ in range(3)
    ]
    elapsed = time.monotonic() - started

    assert [r.status_code for r in codes] == [202, 202, 429]
    assert codes[-1].json()["error"]["code"] == "rate_limited"
    # One request's worth refills in 10 s, less what has refilled since the first POST
    # (a loaded host may take seconds over three requests).
    wait = int(codes[-1].headers["retry-after"])
    assert 10 - math.ceil(elapsed) <= wait <= 10, (wait, elapsed)


async def test_a_run_with_an_empty_id_is_not_found_not_the_list(start_api: StartApi) -> None:
    api = await start_api()
    auth = api.auth(await api.key())
    empty = await api.http.get("/api/v1/runs/", headers=auth)  # the fuzzer found this one
    assert empty.status_code == 404, (empty.status_code, empty.headers.get("location"))
    assert (await api.http.get("/api/v1/runs", headers=auth)).status_code == 200


async def test_errors_have_a_status_a_stable_code_and_a_hint(start_api: StartApi) -> None:
    api = await start_api(api_max_question_chars=100)
    auth = api.auth(await api.key())
    post = api.http.post

    too_long = await post("/api/v1/runs", json={"question": "x" * 101}, headers=auth)
    bad_json = await post("/api/v1/runs", content=b"{not json", headers=auth)
    bad_field = await post(
        "/api/v1/runs", json={"question": "q", "settings": {"mode": "x"}}, headers=auth
    )
    unknown = await api.http.get("/api/v1/runs/nope", headers=auth)
    no_key = await api.http.get("/api/v1/runs")
    bad_key = await api.http.get("/api/v1/runs", headers=api.auth("abk_0123456789ab_nope"))

    got = [
        (r.status_code, r.json()["error"]["code"])
        for r in (too_long, bad_json, bad_field, unknown, no_key, bad_key)
    ]
    assert got == [
        (413, "question_too_large"),
        (422, "invalid_request"),
        (422, "invalid_request"),
        (404, "run_not_found"),
        (401, "unauthorized"),
        (401, "unauthorized"),
    ]
    assert bad_field.json()["error"]["field"] == "settings.mode"
    assert all(r.json()["error"]["hint"] for r in (too_long, bad_json, unknown, no_key))


async def test_a_chunked_body_over_the_limit_is_refused_as_it_arrives(start_api: StartApi) -> None:
    api = await start_api(api_max_question_chars=100)  # limit: 100 * 4 + 64 KiB
    auth = api.auth(await api.key())

    async def chunks():  # no Content-Length: the server must count
        for _ in range(1000):  # 4 MB in all
            yield b" " * 4096

    refused = await api.http.post("/api/v1/runs", content=chunks(), headers=auth)
    small = await api.http.post("/api/v1/runs", json={"question": "q"}, headers=auth)

    assert refused.status_code == 413, refused.text
    assert refused.json()["error"]["code"] == "body_too_large"
    assert small.status_code == 202  # the same client, the next request, is served
    assert await stream_commands(api.redis, keys.Role.INTAKE) != []


async def test_a_declared_body_over_the_limit_is_refused(start_api: StartApi) -> None:
    api = await start_api(api_max_question_chars=100)  # limit: 100 * 4 + 64 KiB
    auth = api.auth(await api.key())
    body = b'{"question": "' + b"q" * 70_000 + b'"}'  # Content-Length says so

    refused = await api.http.post("/api/v1/runs", content=body, headers=auth)

    assert refused.status_code == 413, refused.text
    assert refused.json()["error"]["code"] == "body_too_large"
    assert "over 65936 bytes" in refused.json()["error"]["message"]
    assert await stream_commands(api.redis, keys.Role.INTAKE) == []


async def test_tenant_settings_are_admin_only_and_shape_new_runs(start_api: StartApi) -> None:
    api = await start_api()
    user = api.auth(await api.key())
    admin = api.auth(await api.key(subject="root", role=KeyRole.ADMIN))
    prefs = {"think": True, "timeout_s": 60, "egress_hosts": ["Example.com"]}

    refused = await api.http.put("/api/v1/settings", json=prefs, headers=user)
    stored = await api.http.put("/api/v1/settings", json=prefs, headers=admin)
    seen = await api.http.get("/api/v1/settings", headers=user)
    await api.http.post("/api/v1/runs", json={"question": "q"}, headers=user)

    assert refused.status_code == 403 and refused.json()["error"]["code"] == "admin_only"
    assert stored.status_code == 200 and seen.json()["effective"]["think"] is True
    assert seen.json()["effective"]["egress_hosts"] == ["example.com"]
    [command] = await stream_commands(api.redis, keys.Role.INTAKE)
    assert narrow(AgentTask, command.payload).state.settings.think is True


async def test_conversations_list_get_delete(start_api: StartApi) -> None:
    api = await start_api()
    auth = api.auth(await api.key())
    run = await api.http.post(
        "/api/v1/runs", json={"question": "Hi?", "conversation_id": "c1"}, headers=auth
    )
    await sse(api, auth["Authorization"][7:], run.json()["run_id"])  # `done`: all is stored

    listed = await api.http.get("/api/v1/conversations", headers=auth)
    one = await api.http.get("/api/v1/conversations/c1", headers=auth)
    deleted = await api.http.delete("/api/v1/conversations/c1", headers=auth)
    gone = await api.http.get("/api/v1/conversations/c1", headers=auth)

    assert [c["id"] for c in listed.json()["conversations"]] == ["c1"]
    assert [m["role"] for m in one.json()["messages"]] == ["user", "assistant"]
    assert deleted.status_code == 204 and gone.status_code == 404


async def test_admins_manage_their_tenants_keys(start_api: StartApi) -> None:
    api = await start_api()
    admin = api.auth(await api.key(subject="root", role=KeyRole.ADMIN))

    created = (await api.http.post("/api/v1/keys", json={"subject": "bot"}, headers=admin)).json()
    works = await api.http.get("/api/v1/runs", headers=api.auth(created["key"]))
    forbidden = await api.http.get("/api/v1/keys", headers=api.auth(created["key"]))
    revoked = await api.http.delete(f"/api/v1/keys/{created['id']}", headers=admin)
    after = await api.http.get("/api/v1/runs", headers=api.auth(created["key"]))

    assert works.status_code == 200 and forbidden.status_code == 403
    assert revoked.json()["revoked_at"] is not None and after.status_code == 401


async def test_probes_metrics_and_documents(start_api: StartApi) -> None:
    api = await start_api()

    await api.http.get("/api/v1/runs/some-run", headers=api.auth(await api.key()))
    health = await api.http.get("/healthz")
    ready = await api.http.get("/readyz")
    metrics = await api.http.get("/metrics")
    openapi = await api.http.get("/openapi.json")
    docs = await api.http.get("/docs")
    asyncapi = await api.http.get("/asyncapi")

    assert health.json() == {"status": "ok"}
    assert ready.status_code == 200 and ready.json()["checks"] == {"redis": "ok", "store": "ok"}
    # Labelled by route template, so run ids never become label values.
    assert 'route="/api/v1/runs/{run_id}"' in metrics.text and "some-run" not in metrics.text
    assert "/api/v1/runs/{run_id}/events" in openapi.json()["paths"] and docs.status_code == 200
    doc = asyncapi.json()
    assert doc["asyncapi"] == "3.0.0" and "runs.questions" in doc["channels"]


async def test_cancel_over_rest_ends_the_run_cancelled(start_api: StartApi) -> None:
    api = await start_api(ScriptedLLM(token_delay=0.05))
    key = await api.key()
    run_id = (
        await api.http.post("/api/v1/runs", json={"question": "23 × 19?"}, headers=api.auth(key))
    ).json()["run_id"]

    cancel = await api.http.post(f"/api/v1/runs/{run_id}/cancel", headers=api.auth(key))
    run = await wait_status(api, key, run_id)
    again = await api.http.post(f"/api/v1/runs/{run_id}/cancel", headers=api.auth(key))

    assert cancel.status_code == 202 and run["status"] == "cancelled"
    assert again.status_code == 409 and again.json()["error"]["code"] == "run_ended"


def _stage_counts(metrics_text: str) -> dict[str, float]:
    counts: dict[str, float] = {}
    for line in metrics_text.splitlines():
        if line.startswith("agentbus_api_post_stage_seconds_count{"):
            stage = line.split('stage="', 1)[1].split('"', 1)[0]
            counts[stage] = float(line.rsplit(" ", 1)[1])
    return counts


async def test_a_post_is_timed_stage_by_stage_and_a_read_is_not(start_api: StartApi) -> None:
    api = await start_api()
    key = await api.key()
    before = _stage_counts((await api.http.get("/metrics")).text)

    posted = await api.http.post(
        "/api/v1/runs", json={"question": "23 × 19?"}, headers=api.auth(key)
    )
    await api.http.get(f"/api/v1/runs/{posted.json()['run_id']}", headers=api.auth(key))
    after = _stage_counts((await api.http.get("/metrics")).text)

    assert posted.status_code == 202
    grew = {stage: after.get(stage, 0) - before.get(stage, 0) for stage in after}
    stages = ("before_handler", "auth", "prefs", "idempotency", "rate", "conversation", "quota")
    assert grew == dict.fromkeys((*stages, "publish", "respond"), 1.0)
