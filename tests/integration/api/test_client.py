"""The Python client against a real API server (uvicorn), including a connection cut mid-answer."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agentbus_client import (
    AgentbusClient,
    AsyncAgentbusClient,
    Forbidden,
    NotFound,
    RateLimited,
    RetryRules,
    Snapshot,
    Unauthorized,
)
from agents.llm.scripted import BENCHMARK_ANSWER, ScriptedLLM
from bus import keys
from bus.events import Answer, Done, RunStarted
from bus.store import KeyRole
from bus.transcript import fold
from retrieval.embedders.hashing import HashingEmbedder
from retrieval.settings import RetrievalSettings
from retrieval.stack import Retrieval, open_retrieval
from tests.integration.api.proxy import CuttableProxy
from tests.support import wait_for


async def test_ask_returns_the_final_run_and_stream_yields_typed_events(start_api: Any) -> None:
    api = await start_api()
    key = await api.key()
    async with AsyncAgentbusClient(api.base, key) as client:
        run = await client.ask("What is 23 × 19?")
        events = [e async for e in await client.stream("And again?", mode="single")]
        listed = await client.list_runs()

    assert run.status == "done" and run.answer == BENCHMARK_ANSWER and run.finished
    assert isinstance(events[0], RunStarted) and isinstance(events[-1], Done)
    assert fold(events).answer == BENCHMARK_ANSWER  # type: ignore[arg-type]
    assert {r.id for r in listed.runs} >= {run.id, events[0].run_id}


async def test_a_connection_cut_mid_answer_resumes_with_no_gap_and_no_repeat(
    start_api: Any,
) -> None:
    api = await start_api(ScriptedLLM(token_delay=0.04))
    key = await api.key()
    proxy = CuttableProxy(int(api.base.rsplit(":", 1)[1]))
    await proxy.start()
    seen: list[Any] = []
    ids: list[str] = []
    try:
        async with AsyncAgentbusClient(proxy.url, key) as client:
            stream = await client.stream("What is 23 × 19?")
            async for event in stream:
                seen.append(event)
                ids.append(stream.last_event_id)
                if sum(isinstance(e, Answer) for e in seen) == 5:
                    await proxy.cut(down_for=0.5)  # mid-answer: reset, refuse, come back
            stored = await client.get_run(stream.run_id)
            everything = [e async for e in client.join(stream.run_id)]
    finally:
        await proxy.stop()

    assert stream.reconnects >= 1 and proxy.connections >= 3
    answers = [e for e in seen if isinstance(e, Answer)]
    assert len(answers) > 5  # the cut really came before the end of the answer
    assert "".join(a.delta for a in answers) == stored.answer == BENCHMARK_ANSWER
    assert ids == sorted(set(ids), key=lambda i: tuple(map(int, i.split("-"))))  # no repeat
    assert [e.model_dump() for e in seen] == [e.model_dump() for e in everything]  # no gap


async def test_errors_are_typed_by_the_apis_codes(start_api: Any) -> None:
    api = await start_api()
    alice, mallory = await api.key("t1", "alice"), await api.key("t2", "mallory")
    async with AsyncAgentbusClient(api.base, alice) as client:
        started = await client.start("23 × 19?")
        with pytest.raises(NotFound) as missing:
            await client.get_run("no-such-run")
        with pytest.raises(Forbidden) as not_admin:
            await client.webhook_secret()
    async with AsyncAgentbusClient(api.base, "ab_bogus_key_1234567890") as client:
        with pytest.raises(Unauthorized):
            await client.list_runs()
    async with AsyncAgentbusClient(api.base, mallory) as client:
        with pytest.raises(NotFound) as foreign:  # raised from the websocket's request_error
            [e async for e in client.join(started.run_id)]

    assert missing.value.code == "run_not_found" and missing.value.status == 404
    assert not_admin.value.code == "admin_only"
    assert foreign.value.code == "run_not_found"


async def test_a_429_is_retried_after_its_retry_after(start_api: Any) -> None:
    api = await start_api(api_rate_per_minute=60, api_rate_burst=1)
    key = await api.key()
    async with AsyncAgentbusClient(api.base, key) as client:
        await client.start("first")
        began = time.monotonic()
        second = await client.start("second")  # 429 Retry-After: 1, then accepted
        waited = time.monotonic() - began
    async with AsyncAgentbusClient(api.base, key, retries=RetryRules(max_retries=0)) as client:
        with pytest.raises(RateLimited) as limited:
            await client.start("third")

    assert second.run_id and 0.9 <= waited < 5
    assert limited.value.code == "rate_limited" and limited.value.retry_after == 1


async def test_gates_settings_and_conversations_through_the_client(start_api: Any) -> None:
    api = await start_api()
    admin_key = await api.key("t1", "root", KeyRole.ADMIN)
    async with (
        AsyncAgentbusClient(api.base, admin_key) as admin,
        AsyncAgentbusClient(api.base, await api.key("t1", "alice")) as alice,
    ):
        await admin.put_settings({"mode": "multi", "human_gate": True})
        paused = await alice.ask("What is 23 × 19?")
        gate = await alice.gate(paused.id)
        await alice.resume(paused.id, "approve")
        events = [e async for e in alice.join(paused.id)]
        conversation = await alice.get_conversation(paused.conversation_id or "")
        settings = await alice.get_settings()

    assert paused.status == "suspended" and gate["reason"] == "approve_answer"
    assert isinstance(events[-1], Done) and events[-1].status == "done"
    assert [m.role for m in conversation.messages] == ["user", "assistant"]
    assert settings.effective["mode"] == "multi"


async def test_the_sync_client_from_plain_threaded_code(start_api: Any) -> None:
    api = await start_api()
    key = await api.key()

    def use() -> tuple[Any, list[Any], str]:
        with AgentbusClient(api.base, key) as client:
            run = client.ask("What is 23 × 19?")
            with client.stream("again") as stream:
                events = list(stream)
            return run, events, stream.run_id

    # The server runs on this test's loop: the blocking client must run in another thread.
    run, events, run_id = await asyncio.to_thread(use)

    assert run.answer == BENCHMARK_ANSWER
    assert isinstance(events[-1], Done) and events[-1].run_id == run_id


async def test_a_join_after_the_events_were_trimmed_yields_a_snapshot(start_api: Any) -> None:
    api = await start_api()
    key = await api.key()
    async with AsyncAgentbusClient(api.base, key) as client:
        run = await client.ask("What is 23 × 19?")
        await api.redis.xtrim(keys.run_events(run.id, 0), maxlen=1, approximate=False)
        items = [e async for e in client.join(run.id, "0-1")]

    [snapshot] = items
    assert isinstance(snapshot, Snapshot) and snapshot.run.answer == BENCHMARK_ANSWER
    assert snapshot.run.finished


@pytest.fixture
async def retrieval(tmp_path: Path) -> AsyncIterator[Retrieval]:
    settings = RetrievalSettings(data_dir=tmp_path, embedder="hashing")
    async with open_retrieval(settings, embedder=HashingEmbedder(), path=tmp_path / "q") as r:
        yield r


async def test_documents_through_the_client(start_api: Any, retrieval: Retrieval) -> None:
    api = await start_api(retrieval=retrieval)
    admin = await api.key("t1", "root", KeyRole.ADMIN)
    body = b"# Budget\n\nThe finance budget for next year is 42 million."
    async with AsyncAgentbusClient(api.base, admin) as client:
        upload = await client.upload_documents({"budget.md": body}, acl=["finance"])

        async def ingested() -> bool:
            return (await client.document_job(upload.job_id)).status == "done"

        await wait_for(ingested, within=60, interval=0.1)
        listed = await client.list_documents()
        await client.delete_document(upload.documents[0].doc_id)
        after = await client.list_documents()
    async with AsyncAgentbusClient(api.base, await api.key("t1", "alice")) as client:
        with pytest.raises(Forbidden) as user_key:
            await client.list_documents()

    assert [d.source for d in listed] == ["budget.md"] and listed[0].acl == ["finance"]
    assert listed[0].chunks >= 1 and after == []
    assert user_key.value.code == "admin_only"


async def test_a_join_after_the_events_expired_yields_a_snapshot(start_api: Any) -> None:
    # join_run follows without reading the store only for a run published within the
    # last minute; an older run whose stream is gone is snapshotted from the store.
    api = await start_api()
    key = await api.key()
    async with AsyncAgentbusClient(api.base, key) as client:
        run = await client.ask("What is 23 × 19?")
        await api.redis.delete(keys.run_events(run.id, 0))
        owner = keys.run_owner(run.id, 0)
        await api.redis.expire(owner, await api.redis.ttl(owner) - 120)  # published 2 min ago
        items = [e async for e in client.join(run.id)]

    [snapshot] = items
    assert isinstance(snapshot, Snapshot) and snapshot.run.answer == BENCHMARK_ANSWER


async def test_sse_of_a_fresh_run_and_of_an_expired_one(start_api: Any) -> None:
    api = await start_api()
    key = await api.key()
    posted = await api.http.post(
        "/api/v1/runs", json={"question": "What is 23 × 19?"}, headers=api.auth(key)
    )
    run_id = posted.json()["run_id"]
    # Followed at once, usually before intake wrote its first event: read to `done`.
    fresh = await api.http.get(f"/api/v1/runs/{run_id}/events", headers=api.auth(key))
    assert '"type":"done"' in fresh.text and "event: snapshot" not in fresh.text

    await api.redis.delete(keys.run_events(run_id, 0))
    owner = keys.run_owner(run_id, 0)
    await api.redis.expire(owner, await api.redis.ttl(owner) - 120)
    expired = await api.http.get(f"/api/v1/runs/{run_id}/events", headers=api.auth(key))
    assert expired.text.startswith("event: snapshot") and BENCHMARK_ANSWER[:20] in expired.text


async def test_the_client_reads_what_its_user_spent(start_api: Any) -> None:
    api = await start_api()
    key = await api.key()
    async with AsyncAgentbusClient(api.base, key) as client:
        before = await client.usage()
        run = await client.ask("What is 23 × 19?")
        after = await client.usage("month")
    spent = run.usage or {}
    assert (before.tokens, before.period, before.subject) == (0, "day", "alice")
    assert after.tokens == spent["prompt_tokens"] + spent["completion_tokens"] > 0
