"""`agentbus backup` while `agentbus up` runs, then `agentbus restore` after it stopped: the
conversations, documents, a paused run and the audit chain come back as they were at the
backup, and what changed after it is gone."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from redis.asyncio import Redis

from bus import embedded
from bus.publish import read_events
from tests import warm_cli
from tests.e2e.test_multitask_processes import ready
from tests.e2e.test_up import embedded_env, until_up
from tests.processes import cli, free_port, processes, spawn
from tests.support import wait_for

KEPT = "The zephyrine valve of the north pump closes at 40 bar."
LATER = "The quillforth gauge of the south pump reads in kelvin."


async def _run(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """``agentbus ARGS`` in a process of its own (forked warm: ``tests.warm_cli``)."""
    done = await warm_cli.run(args, {**os.environ, **env})
    return done.returncode, done.stdout, done.stderr


async def _paused_run(env: dict[str, str]) -> str:
    code, out, _ = await _run(
        ["ask", "--json", "--mode", "multi", "--human-gate", "What is 23 × 19?"], env
    )
    assert code == 3  # paused at the answer gate
    last = json.loads(out.splitlines()[-1])
    assert last["type"] == "approval_request"
    return str(last["run_id"])


async def _ingest(tmp_path: Path, name: str, text: str, env: dict[str, str]) -> None:
    doc = tmp_path / "docs" / name
    doc.parent.mkdir(exist_ok=True)
    doc.write_text(f"# {name}\n\n{text}\n")
    report = json.loads(await cli(["ingest", "--json", str(doc)], env))
    assert report["status"] == "done" and report["chunks"] >= 1


async def _search(query: str, env: dict[str, str]) -> str:
    found = json.loads(
        await cli(["tools", "call", "search_docs", json.dumps({"query": query})], env)
    )
    assert found["status"] == "ok"
    return json.dumps(found["result"]["results"])  # not the query it echoes


async def _conversations(http: httpx.AsyncClient, key: str) -> set[str]:
    r = await http.get("/api/v1/conversations", headers={"Authorization": f"Bearer {key}"})
    assert r.status_code == 200
    return {c["id"] for c in r.json()["conversations"]}


async def _audit(env: dict[str, str]) -> tuple[str, list[dict[str, Any]]]:
    verified = await cli(["audit", "verify"], env)
    rows = [json.loads(line) for line in (await cli(["audit", "list", "--json"], env)).splitlines()]
    return verified, rows


async def _resumed_to_done(data: Path, run_id: str, env: dict[str, str]) -> str:
    await cli(["runs", "resume", run_id, "approve"], env)
    redis = Redis.from_url(embedded.socket_url(data))
    try:
        async with asyncio.timeout(60):
            async for _, event in read_events(redis, run_id, 0, block_ms=5000):
                if event.type == "done":
                    assert event.status == "done"
                    return event.answer or ""
    finally:
        await redis.aclose()
    raise AssertionError("the resumed run's events ended without done")


async def _stop(up: subprocess.Popen[bytes]) -> None:
    up.send_signal(signal.SIGTERM)  # stops the workers and the embedded Redis
    assert await asyncio.to_thread(up.wait, 60) == 0


@pytest.mark.timeout(600)
async def test_a_backup_taken_while_up_runs_restores_what_was_there_and_only_that(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()
    data, env = embedded_env(
        tmp_path, monkeypatch, AGENTBUS_LLM="scripted", AGENTBUS_API_PORT=str(port)
    )
    backup = tmp_path / "backup"
    base = f"http://127.0.0.1:{port}"
    with processes() as procs:
        first = spawn(["up"], env, tmp_path / "up1.log")
        procs.append(first)
        await until_up(data, tmp_path / "up1.log")
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            await wait_for(lambda: ready(http), within=90, interval=0.2)
            key = (data / "local-api-key").read_text().strip()
            await _ingest(tmp_path, "north.md", KEPT, env)
            assert (await _run(["ask", "What is 23 × 19?"], env))[0] == 0  # a calculator call
            paused = await _paused_run(env)
            verified, rows = await _settled_audit(env)
            conversations = await _conversations(http, key)

            out = await cli(["backup", str(backup)], env)  # while up runs

            # After the backup: another document, another conversation (and audit row),
            # and the paused run approved to its end.
            await _ingest(tmp_path, "south.md", LATER, env)
            assert (await _run(["ask", "What is 12 × 12?"], env))[0] == 0
            assert "437" in await _resumed_to_done(data, paused, env)
            assert len(await _conversations(http, key)) > len(conversations)
            assert "quillforth" in await _search("quillforth gauge", env)
        await _stop(first)

        restored = await cli(["restore", str(backup)], env)

        second = spawn(["up"], env, tmp_path / "up2.log")
        procs.append(second)
        await until_up(data, tmp_path / "up2.log")
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            await wait_for(lambda: ready(http), within=90, interval=0.2)
            after_verified, after_rows = await _audit(env)  # before any call adds a row
            after_conversations = await _conversations(http, key)
            kept = await _search("zephyrine valve", env)
            later = await _search("quillforth gauge", env)
            answer = await _resumed_to_done(data, paused, env)
        await _stop(second)

    assert "backed up" in out and "vector store" in out
    assert "restored the backup" in restored and "the data it replaced is in" in restored
    assert (backup / "manifest.json").stat().st_mode & 0o077 == 0
    assert after_verified == verified and "ok" in verified.lower()
    assert [r["row_hash"] for r in after_rows] == [r["row_hash"] for r in rows]
    assert after_conversations == conversations
    assert "zephyrine" in kept
    assert "quillforth" not in later  # ingested after the backup: gone
    assert "437" in answer  # paused again as at the backup, and resumable to its end


async def _settled_audit(env: dict[str, str]) -> tuple[str, list[dict[str, Any]]]:
    """The audit log once the recorder has written every row of the runs so far (both
    runs called the calculator; the log then stays the same for a while)."""
    seen = await _audit(env)
    async with asyncio.timeout(90):
        while True:
            await asyncio.sleep(1.5)
            now = await _audit(env)
            calls = [r for r in now[1] if r["tool"] == "calculator"]
            if now == seen and len(calls) >= 2:
                return now
            seen = now
