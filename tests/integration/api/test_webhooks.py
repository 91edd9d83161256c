"""Signed webhooks end to end: a real API and workers, a local receiver that verifies them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from bus import keys
from bus.store import KeyRole
from tests.integration.api.conftest import recv
from tests.support import wait_for
from tests.unit.gateway.local_http import LocalServer, Seen, serve

HOOK_SETTINGS = {"webhook_private_hosts": "127.0.0.1", "webhook_backoff_s": 0.2}


class Receiver:
    """Verifies every request's signature with the reference library; fails the first two
    attempts of each message (503), then accepts it."""

    def __init__(self, server: LocalServer) -> None:
        self.server = server
        self.secret: str | None = None
        self.attempts: dict[str, int] = {}
        self.accepted: dict[str, dict[str, Any]] = {}
        self.bad_signatures = 0
        server.routes["/hook"] = self.handle

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.port}/hook"

    def handle(self, seen: Seen) -> tuple[int, dict[str, str], bytes]:
        assert self.secret is not None
        try:
            payload = Webhook(self.secret).verify(seen.body, seen.headers)
        except WebhookVerificationError:
            self.bad_signatures += 1
            return 400, {}, b"bad signature"
        msg_id = seen.headers["webhook-id"]
        self.attempts[msg_id] = self.attempts.get(msg_id, 0) + 1
        if self.attempts[msg_id] <= 2:
            return 503, {}, b"try later"
        self.accepted.setdefault(msg_id, payload)  # idempotent by webhook-id
        return 204, {}, b""

    async def wait_for(self, count: int, within: float = 60) -> list[dict[str, Any]]:
        async def enough() -> bool:
            return len(self.accepted) >= count

        await wait_for(enough, within=within, interval=0.05)
        return list(self.accepted.values())


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    for server in serve(LocalServer(), None):
        yield Receiver(server)


async def hook_tenant(api: Any, receiver: Receiver, **prefs: Any) -> tuple[str, str]:
    """An admin and a user key of tenant t1, whose egress allowlist has the receiver."""
    admin = await api.key("t1", "root", KeyRole.ADMIN)
    prefs = {"egress_enabled": True, "egress_hosts": ["127.0.0.1"], **prefs}
    put = await api.http.put("/api/v1/settings", json=prefs, headers=api.auth(admin))
    assert put.status_code == 200, put.text
    got = await api.http.get("/api/v1/settings/webhook-secret", headers=api.auth(admin))
    assert got.status_code == 200, got.text
    receiver.secret = got.json()["secret"]
    return admin, await api.key("t1", "alice")


async def test_a_rest_question_gets_its_result_signed_after_two_failures(
    start_api: Any, receiver: Receiver
) -> None:
    api = await start_api(**HOOK_SETTINGS)
    _, alice = await hook_tenant(api, receiver)

    run = await api.http.post(
        "/api/v1/runs",
        json={"question": "What is 23 × 19?", "webhook_url": receiver.url},
        headers=api.auth(alice),
    )
    [payload] = await receiver.wait_for(1)
    run_id = run.json()["run_id"]
    listed = await api.http.get(f"/api/v1/runs/{run_id}/deliveries", headers=api.auth(alice))
    stored = (await api.http.get(f"/api/v1/runs/{run_id}", headers=api.auth(alice))).json()

    assert payload["type"] == "run.completed"
    assert payload["data"]["run_id"] == run_id and payload["data"]["status"] == "done"
    assert payload["data"]["answer"] == stored["answer"] and "437" in payload["data"]["answer"]
    assert payload["data"]["conversation_id"] == run.json()["conversation_id"]
    assert receiver.bad_signatures == 0 and list(receiver.attempts.values()) == [3]
    [delivery] = listed.json()["deliveries"]
    assert delivery["status"] == "delivered" and delivery["attempts"] == 3
    assert delivery["last_status_code"] == 204 and delivery["url"] == receiver.url
    assert delivery["id"] == next(iter(receiver.attempts))


async def test_websocket_and_stream_questions_name_webhooks_too(
    start_api: Any, receiver: Receiver
) -> None:
    api = await start_api(**HOOK_SETTINGS)
    _, alice = await hook_tenant(api, receiver)

    ws = await api.ws(alice)
    await ws.send(json.dumps({"type": "ask", "question": "23 × 19?", "webhook_url": receiver.url}))
    ws_run = (await recv(ws))["run_id"]
    question = {
        "api_key": alice,
        "question": "23 × 19?",
        "run_id": "ticket-4711",
        "webhook_url": receiver.url,
    }
    await api.redis.xadd(keys.QUESTIONS_STREAM, {"data": json.dumps(question)})
    payloads = await receiver.wait_for(2)

    assert {p["data"]["run_id"] for p in payloads} == {ws_run, "ticket-4711"}
    assert {p["data"]["status"] for p in payloads} == {"done"}


async def test_approval_requests_go_to_the_webhook_when_asked(
    start_api: Any, receiver: Receiver
) -> None:
    api = await start_api(**HOOK_SETTINGS)
    _, alice = await hook_tenant(api, receiver, mode="multi", human_gate=True)

    body = {"question": "23 × 19?", "webhook_url": receiver.url, "webhook_approvals": True}
    run_id = (await api.http.post("/api/v1/runs", json=body, headers=api.auth(alice))).json()[
        "run_id"
    ]
    [approval] = await receiver.wait_for(1)
    resume = approval["data"]["resume"]
    resumed = await api.http.post(
        resume["path"], json={"decision": resume["decisions"][0]}, headers=api.auth(alice)
    )
    _, completed = await receiver.wait_for(2)

    assert approval["type"] == "run.approval_requested" and approval["data"]["run_id"] == run_id
    assert approval["data"]["reason"] == "approve_answer" and approval["data"]["answer"]
    assert resumed.status_code == 200, resumed.text
    assert completed["type"] == "run.completed" and completed["data"]["status"] == "done"


async def test_refused_webhooks_foreign_runs_and_the_secret_api(
    start_api: Any, receiver: Receiver
) -> None:
    api = await start_api(**HOOK_SETTINGS)
    admin, alice = await hook_tenant(api, receiver)

    async def ask(url: str) -> Any:
        body = {"question": "hi", "webhook_url": url}
        return await api.http.post("/api/v1/runs", json=body, headers=api.auth(alice))

    private, elsewhere = await ask("http://10.0.0.7/hook"), await ask("https://example.com/h")
    ok = await ask(receiver.url)
    deliveries = f"/api/v1/runs/{ok.json()['run_id']}/deliveries"
    foreign = await api.http.get(deliveries, headers=api.auth(await api.key("t2", "mallory")))
    colleague = await api.http.get(deliveries, headers=api.auth(await api.key("t1", "bob")))
    by_admin = await api.http.get(deliveries, headers=api.auth(admin))
    not_admin = await api.http.get("/api/v1/settings/webhook-secret", headers=api.auth(alice))
    before = receiver.secret
    rotated = await api.http.post("/api/v1/settings/webhook-secret/rotate", headers=api.auth(admin))

    for refused in (private, elsewhere):
        assert refused.status_code == 422, refused.text
        assert refused.json()["error"]["code"] == "webhook_refused"
        assert refused.json()["error"]["field"] == "webhook_url"
    assert "not a public address" in private.json()["error"]["message"]
    assert "allowlist" in elsewhere.json()["error"]["message"]
    assert ok.status_code == 202 and foreign.status_code == 404 and not_admin.status_code == 403
    assert colleague.status_code == 404  # runs belong to their user
    assert by_admin.status_code == 200 and by_admin.json()["run_id"] == ok.json()["run_id"]
    assert rotated.status_code == 200 and rotated.json()["secret"] not in (before, None)
