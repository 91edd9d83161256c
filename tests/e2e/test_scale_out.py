"""Every role as several processes on the embedded defaults.

``agentbus up --processes 2`` owns the embedded Redis and the embedded vector store (it runs
the retrieval role; its helper runs every other role). Then extra ``agentbus worker``
processes join: one of every role, and a second gateway and a second retrieval process
besides. The extra retrieval processes stand by for the store instead of dying with
``qdrant_locked``; search_docs calls and multi-mode gather steps reach the store over the
bus. Runs in both modes finish, each exactly once: one ``done``, each tool call answered
once, one audit row per call.

The second test takes the store over: two retrieval processes on a shared Redis, the
owner SIGKILLed mid-way, and the stand-by answers the searches after it.
"""

from __future__ import annotations

import asyncio
import collections
import json
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis

from tests.conftest import TEST_REDIS_URL
from tests.e2e.test_up import embedded_env, until_up
from tests.processes import cli, processes, spawn
from tests.support import wait_for

EVERY_ROLE = [
    "intake",
    "planner",
    "retrieval",
    "researcher",
    "gateway",
    "critic",
    "verifier",
    "finalizer",
    "recorder",
]
DOC = "# Billing\n\nInvoices are sent on the first working day of each month.\n"
QUESTION = "What do our docs say about when invoices are sent?"


async def _ask(env: dict[str, str], *args: str) -> list[dict[str, Any]]:
    out = await cli(["ask", "--json", *args, QUESTION], env)
    return [json.loads(line) for line in out.splitlines() if line.strip()]


async def _audit_calls(env: dict[str, str], run_id: str) -> list[str]:
    out = await cli(["audit", "list", "--json", "--run-id", run_id], env)
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    return [r["call_id"] for r in rows if r.get("tool") == "search_docs"]


def _exactly_once(events: list[dict[str, Any]]) -> list[str]:
    """The run ended once, done, and each search_docs call was answered once, with the doc."""
    assert [e["type"] for e in events].count("done") == 1, events
    assert events[-1]["type"] == "done" and events[-1]["status"] == "done", events[-1]
    results = [e for e in events if e["type"] == "tool_result" and e["tool"] == "search_docs"]
    assert results, "the researcher searched the documents"
    calls = [r["call_id"] for r in results]
    assert len(calls) == len(set(calls)), calls
    for r in results:
        assert r["status"] == "ok", r
        assert r["result"]["results"][0]["source"].endswith("docs/billing.md")
    return calls


@pytest.mark.timeout(900)
async def test_up_with_two_processes_and_extra_workers_of_every_role_run_each_run_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, env = embedded_env(
        tmp_path, monkeypatch, AGENTBUS_LLM="scripted", AGENTBUS_EMBEDDER="hashing"
    )
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "billing.md").write_text(DOC)
    with processes() as procs:
        up = spawn(["up", "--processes", "2"], env, tmp_path / "up.log")
        procs.append(up)
        await until_up(data, tmp_path / "up.log")
        extra = {
            "every": ["worker", *EVERY_ROLE],
            "gateway": ["worker", "gateway"],
            "retrieval": ["worker", "retrieval"],
        }
        for name, args in extra.items():
            procs.append(spawn(args, env, tmp_path / f"{name}.log"))

        async def stand_by() -> bool:
            return all(_shows(tmp_path / f"{n}.log", "stand-by") for n in ("every", "retrieval"))

        # The store is up's: the extra retrieval processes wait for it, they do not die.
        await wait_for(stand_by, within=180, interval=0.5)
        assert all(p.poll() is None for p in procs), [p.returncode for p in procs]

        ingested = json.loads(await cli(["ingest", "--json", str(tmp_path / "docs")], env))
        assert ingested["status"] == "done" and ingested["embedded"] == 1

        runs = await asyncio.gather(
            *(_ask(env) for _ in range(3)),
            *(_ask(env, "--mode", "multi", "--sources", "documents") for _ in range(3)),
        )
        for n, events in enumerate(runs):
            calls = _exactly_once(events)
            run_id = events[0]["run_id"]

            async def audited(run_id: str = run_id, calls: list[str] = calls) -> bool:
                # The recorder writes the rows the gateway's steps committed, in batches.
                rows = collections.Counter(await _audit_calls(env, run_id))
                assert all(n == 1 for n in rows.values()), rows
                return rows == collections.Counter(calls)

            await wait_for(audited, within=60, interval=0.5)
            if n >= 3:  # multi: the evidence gather searched the documents, merged once
                merges = [e for e in events if e["type"] == "citations" and e["agent"] == "merge"]
                assert merges
                for merged in merges:
                    assert {c["source_kind"] for c in merged["items"]} == {"documents"}
        assert all(p.poll() is None for p in procs), [p.returncode for p in procs]
        assert not any(_shows(tmp_path / f"{n}.log", "qdrant_locked") for n in [*extra, "up"])


@pytest.mark.timeout(600)
async def test_a_stand_by_retrieval_process_takes_the_store_over_when_its_owner_dies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, real_redis: Redis
) -> None:
    _, env = embedded_env(
        tmp_path,
        monkeypatch,
        AGENTBUS_LLM="scripted",
        AGENTBUS_EMBEDDER="hashing",
        AGENTBUS_REDIS_URL=TEST_REDIS_URL,
        AGENTBUS_DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'runs.db'}",
        AGENTBUS_CLAIM_IDLE_MS="2000",
    )
    await cli(["db", "upgrade"], env)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "billing.md").write_text(DOC)
    with processes() as procs:
        first = spawn(["worker", "retrieval"], env, tmp_path / "first.log")
        procs.append(first)

        def owns(log: str) -> Callable[[], Awaitable[bool]]:
            return lambda: _has(tmp_path / log, "owns the vector store")

        await wait_for(owns("first.log"), within=120, interval=0.5)
        second = spawn(["worker", "retrieval"], env, tmp_path / "second.log")
        procs.append(second)
        await wait_for(lambda: _has(tmp_path / "second.log", "stand-by"), within=120, interval=0.5)
        procs.append(spawn(["worker", "gateway", "recorder"], env, tmp_path / "gateway.log"))
        ingested = json.loads(await cli(["ingest", "--json", str(tmp_path / "docs")], env))
        assert ingested["status"] == "done" and ingested["embedded"] == 1

        first.send_signal(signal.SIGKILL)
        first.wait(10)
        await wait_for(owns("second.log"), within=60, interval=0.5)
        out = await cli(
            ["tools", "call", "search_docs", '{"query": "when are invoices sent"}'], env
        )
        outcome = json.loads(out)
        assert outcome["status"] == "ok", outcome
        [found] = outcome["result"]["results"]
        assert found["source"].endswith("docs/billing.md")
        assert second.poll() is None


def _shows(log: Path, text: str) -> bool:
    return text in log.read_text()  # a small local file: read it in place


async def _has(log: Path, text: str) -> bool:
    return _shows(log, text)
