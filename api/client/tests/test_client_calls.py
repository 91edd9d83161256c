"""The client's calls against a scripted HTTP API: what it sends, what it hands back."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx

from agentbus_client import AgentbusClient, AsyncAgentbusClient, RetryRules
from agentbus_contracts import Delivery, Document, Run

FAST = RetryRules(max_retries=2, backoff_s=0.001, max_wait_s=5)
WHEN = "2026-12-01T20:00:00Z"


def api(
    handle: Callable[[httpx.Request], httpx.Response],
) -> tuple[httpx.AsyncClient, list[httpx.Request]]:
    """An httpx client whose requests ``handle`` answers; records every request."""
    seen: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return handle(request)

    return httpx.AsyncClient(transport=httpx.MockTransport(record)), seen


async def test_a_start_retried_after_a_503_keeps_one_idempotency_key() -> None:
    answers = iter([httpx.Response(503), httpx.Response(202, json=_accepted())])
    http, seen = api(lambda _: next(answers))
    async with AsyncAgentbusClient("http://api", "abk_1_x", retries=FAST, http=http) as client:
        started = await client.start("What is 23 × 19?", mode="multi", think=False)

    assert started.run_id == "r1" and started.events_url == "/api/v1/runs/r1/events"
    keys = {request.headers["idempotency-key"] for request in seen}
    assert len(seen) == 2 and len(keys) == 1
    body = json.loads(seen[1].content)
    assert body["settings"] == {"mode": "multi", "think": False}
    assert seen[1].headers["authorization"] == "Bearer abk_1_x"
    await http.aclose()


async def test_reads_come_back_as_the_wire_models() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/api/v1/runs/r1":
            return httpx.Response(200, json={"id": "r1", "status": "done", "cost_usd": 0.01})
        if path == "/api/v1/runs/r1/deliveries":
            return httpx.Response(200, json={"run_id": "r1", "deliveries": [_delivery()]})
        if path == "/api/v1/documents":
            return httpx.Response(200, json=[_document()])
        return httpx.Response(404, json={"error": {"code": "x", "message": "x", "hint": ""}})

    http, _ = api(handle)
    async with AsyncAgentbusClient("http://api", "k", http=http) as client:
        run = await client.get_run("r1")
        deliveries = await client.deliveries("r1")
        documents = await client.list_documents()

    assert isinstance(run, Run) and run.finished and run.cost_usd == 0.01
    assert [type(d) for d in deliveries] == [Delivery] and deliveries[0].status == "delivered"
    assert [type(d) for d in documents] == [Document] and documents[0].tenant_id == "t1"
    await http.aclose()


def test_the_blocking_client_makes_the_same_calls() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            return httpx.Response(202, json=_accepted())
        page = {"runs": [{"id": "r1", "status": "queued"}], "next_before": None}
        return httpx.Response(200, json=page)

    http, seen = api(handle)
    with AgentbusClient("http://api/", "k", http=http) as client:
        started = client.start("2+2?")
        page = client.list_runs(limit=1)

    assert started.run_id == "r1" and [r.id for r in page.runs] == ["r1"]
    assert [str(r.url) for r in seen] == [
        "http://api/api/v1/runs",
        "http://api/api/v1/runs?limit=1",
    ]


def _accepted() -> dict[str, object]:
    return {
        "run_id": "r1",
        "conversation_id": "c1",
        "status": "queued",
        "events_url": "/api/v1/runs/r1/events",
        "replayed": False,
    }


def _delivery() -> dict[str, object]:
    return {
        "id": "msg_1",
        "type": "run.done",
        "url": "https://hooks.example/x",
        "status": "delivered",
        "attempts": 1,
        "created_at": WHEN,
        "delivered_at": WHEN,
    }


def _document() -> dict[str, object]:
    return {
        "tenant_id": "t1",
        "doc_id": "d1",
        "source": "notes.md",
        "title": "Notes",
        "uploaded_by": "alice",
        "job_id": "j1",
        "chunks": 3,
        "size_bytes": 120,
        "created_at": WHEN,
        "updated_at": WHEN,
    }
