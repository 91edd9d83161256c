"""A run paused at a gate survives a restart of every process, Redis included."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from redis.asyncio import Redis

from bus import embedded
from bus.publish import read_events
from tests.processes import AGENTBUS, cli, processes, spawn
from tests.support import wait_for


async def test_suspended_run_resumes_to_done_after_a_full_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in [k for k in os.environ if k.startswith("AGENTBUS_")]:
        monkeypatch.delenv(key)
    data = tmp_path / "data"
    env = {"AGENTBUS_DATA_DIR": str(data), "AGENTBUS_LLM": "scripted", "AGENTBUS_API_PORT": "0"}

    async def up_ready(log: Path) -> bool:
        return embedded.is_running(data) and _started(log)

    with processes() as procs:
        first = spawn(["up"], env, tmp_path / "up1.log")
        procs.append(first)
        await wait_for(lambda: up_ready(tmp_path / "up1.log"), within=30)
        proc = await _ask_until_paused(env)
        events = [json.loads(line) for line in proc.splitlines()]
        assert events[-1]["type"] == "approval_request"
        run_id = events[-1]["run_id"]

        first.send_signal(signal.SIGTERM)  # stops the workers and the embedded Redis
        assert first.wait(30) == 0
        assert not embedded.is_running(data)

        second = spawn(["up"], env, tmp_path / "up2.log")
        procs.append(second)
        await wait_for(lambda: up_ready(tmp_path / "up2.log"), within=30)
        await cli(["runs", "resume", run_id, "approve"], env)

        redis = Redis.from_url(embedded.socket_url(data))
        after = events[-1]["id"]
        rest = [e async for _, e in read_events(redis, run_id, 0, after=after, block_ms=5000)]
        await redis.aclose()
    assert rest[-1].type == "done" and rest[-1].status == "done"
    assert "437" in (rest[-1].answer or "")


async def _ask_until_paused(env: dict[str, str]) -> str:
    import asyncio

    proc = await asyncio.create_subprocess_exec(
        AGENTBUS,
        "ask",
        "--json",
        "--mode",
        "multi",
        "--human-gate",
        "What is 23 × 19?",
        env={**os.environ, **env},
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, _ = await proc.communicate()
    assert proc.returncode == 3  # paused at a gate
    return out.decode()


def _started(log: Path) -> bool:
    return "roles:" in log.read_text()
