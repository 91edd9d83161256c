"""A run paused at a gate survives a restart of every process, Redis included."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from pathlib import Path

import pytest
from redis.asyncio import Redis

from bus import embedded
from bus.publish import read_events
from tests import warm_cli
from tests.e2e.test_up import until_up
from tests.processes import AGENTBUS, cli, processes, spawn


async def test_suspended_run_resumes_to_done_after_a_full_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in [k for k in os.environ if k.startswith("AGENTBUS_")]:
        monkeypatch.delenv(key)
    data = tmp_path / "data"
    env = {"AGENTBUS_DATA_DIR": str(data), "AGENTBUS_LLM": "scripted", "AGENTBUS_API_PORT": "0"}

    with processes() as procs:
        first = spawn(["up"], env, tmp_path / "up1.log")
        procs.append(first)
        await until_up(data, tmp_path / "up1.log")
        proc = await _ask_until_paused(env)
        events = [json.loads(line) for line in proc.splitlines()]
        assert events[-1]["type"] == "approval_request"
        run_id = events[-1]["run_id"]

        first.send_signal(signal.SIGTERM)  # stops the workers and the embedded Redis
        assert first.wait(30) == 0
        assert not embedded.is_running(data)

        second = spawn(["up"], env, tmp_path / "up2.log")
        procs.append(second)
        await until_up(data, tmp_path / "up2.log")
        await cli(["runs", "resume", run_id, "approve"], env)

        redis = Redis.from_url(embedded.socket_url(data))
        after = events[-1]["id"]
        rest = [e async for _, e in read_events(redis, run_id, 0, after=after, block_ms=5000)]
        await redis.aclose()
    assert rest[-1].type == "done" and rest[-1].status == "done"
    assert "437" in (rest[-1].answer or "")


async def _ask_until_paused(env: dict[str, str]) -> str:
    """``agentbus ask`` in a process of its own (forked warm: ``tests.warm_cli``), to its gate."""
    args = ["ask", "--json", "--mode", "multi", "--human-gate", "What is 23 × 19?"]
    done = await warm_cli.run(args, {**os.environ, **env})
    assert done.returncode == 3  # paused at a gate
    return done.stdout


async def test_ask_offers_the_gate_choices_at_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio
    import pty

    for key in [k for k in os.environ if k.startswith("AGENTBUS_")]:
        monkeypatch.delenv(key)
    data = tmp_path / "data"
    env = {"AGENTBUS_DATA_DIR": str(data), "AGENTBUS_LLM": "scripted", "AGENTBUS_API_PORT": "0"}
    with processes() as procs:
        procs.append(spawn(["up"], env, tmp_path / "up.log"))
        await until_up(data, tmp_path / "up.log")
        controller, terminal = pty.openpty()  # `ask` sees a terminal, as a person's would
        proc = await asyncio.create_subprocess_exec(
            AGENTBUS,
            "ask",
            "--mode",
            "multi",
            "--human-gate",
            "What is 23 × 19?",
            env={**os.environ, **env},
            stdin=terminal,
            stdout=terminal,
            stderr=terminal,
        )
        os.close(terminal)
        shown = b""
        async with asyncio.timeout(60):
            while b"decision" not in shown:
                shown += await asyncio.to_thread(os.read, controller, 4096)
            os.write(controller, b"approve\n")
            while proc.returncode is None:
                with contextlib.suppress(TimeoutError, OSError):
                    shown += await asyncio.wait_for(asyncio.to_thread(os.read, controller, 4096), 1)
                if b"conversation:" in shown:
                    break
            assert await proc.wait() == 0  # `ask` exits 0 only when the run ended `done`
        os.close(controller)
    text = shown.decode(errors="replace")
    assert "approval needed: approve_answer" in text and "approve / reject" in text
    before, after = text.split("decision", 1)
    assert "437" in before  # the answer streamed before the gate opened
    assert "conversation:" in after  # the approved run ran to its end
