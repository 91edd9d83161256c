"""`agentbus up` on embedded defaults, driven as a user would from another shell."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

import pytest
from redis.asyncio import Redis

from bus import embedded
from bus.publish import publish, read_events
from bus.settings import BusSettings
from tests.processes import cli, processes, spawn
from tests.support import noop_command, wait_for


def embedded_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **settings: str
) -> tuple[Path, dict[str, str]]:
    """Nothing configured (embedded defaults) but a data folder, and ``settings``."""
    for key in [k for k in os.environ if k.startswith("AGENTBUS_")]:
        monkeypatch.delenv(key)
    data = tmp_path / "data"
    return data, {"AGENTBUS_DATA_DIR": str(data), "AGENTBUS_API_PORT": "0", **settings}


async def until_up(data: Path, log: Path, banner: str = "roles:") -> None:
    """Wait for the embedded Redis and ``banner`` in ``up``'s output."""

    def shown() -> bool:  # a small local file: read it in place
        return banner in log.read_text()

    async def ready() -> bool:
        return embedded.is_running(data) and shown()

    await wait_for(ready, within=90)  # a loaded 2-core host took over 30 s to import and migrate


async def test_up_starts_everything_and_stops_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, env = embedded_env(tmp_path, monkeypatch)
    with processes() as procs:
        up = spawn(["up"], env, tmp_path / "up.log")
        procs.append(up)
        await until_up(data, tmp_path / "up.log")
        assert (data / "agentbus.db").exists()  # the store was created and migrated

        s = BusSettings(data_dir=data)
        client = Redis.from_url(embedded.socket_url(data))
        cmd = noop_command(hops=3, tokens=["hi"])
        await publish(client, cmd, s)
        events = [e async for _, e in read_events(client, cmd.run_id, 0, block_ms=5000)]
        assert events[-1].type == "done"
        await client.aclose()

        rows = [json.loads(line) for line in (await cli(["streams", "--json"], env)).splitlines()]
        assert any(r["group"] == "noop" and r["pending"] == 0 for r in rows)
        # The retrieval role's ingest lane is listed with the role's group.
        lanes = [r for r in rows if r["stream"] == "ab:{0}:role:retrieval:ingest"]
        assert [r["group"] for r in lanes] == ["retrieval"]

        up.send_signal(signal.SIGTERM)
        assert up.wait(30) == 0
    await asyncio.sleep(0.1)
    assert not embedded.is_running(data)  # the embedded Redis stopped with it


async def test_ask_renders_a_run_live_against_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, env = embedded_env(tmp_path, monkeypatch, AGENTBUS_LLM="scripted")
    with processes() as procs:
        procs.append(spawn(["up"], env, tmp_path / "up.log"))
        await until_up(data, tmp_path / "up.log")
        shown = await cli(["ask", "What is 23 × 19?"], env)
        assert "→ calculator" in shown and "← calculator ok" in shown
        assert "437" in shown.split("← calculator ok")[1]
        conversation = shown.strip().splitlines()[-1].removeprefix("conversation: ")

        lines = await cli(["ask", "--json", "--conversation", conversation, "And doubled?"], env)
        events = [json.loads(line) for line in lines.splitlines()]
        assert events[0]["type"] == "run_started" and events[-1]["type"] == "done"
        assert any(e["type"] == "interpreted" for e in events)  # a follow-up
        assert all("id" in e for e in events)


async def test_up_with_helper_processes_shares_the_work_and_takes_them_down_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentbus_bench.turn import _command

    async def one_run(client: Redis, s: BusSettings) -> list[str]:
        """A single-mode run's event types, consecutive answer batches as one."""
        command = _command("single")
        await publish(client, command, s)
        types: list[str] = []
        async for _, event in read_events(client, command.run_id, command.shard):
            if not (event.type == "answer" and types[-1:] == ["answer"]):
                types.append(event.type)
            if event.type == "done":
                return types
        return types

    data, env = embedded_env(tmp_path, monkeypatch, AGENTBUS_LLM="scripted")
    with processes() as procs:
        up = spawn(["up", "--processes", "2"], env, tmp_path / "up.log")
        procs.append(up)
        await until_up(data, tmp_path / "up.log", "processes: 2")
        client = Redis.from_url(embedded.socket_url(data))
        s = BusSettings(data_dir=data)

        async def researchers() -> set[int]:
            consumers = await client.xinfo_consumers("ab:{0}:role:researcher", "researcher")
            return {int(c["name"].decode().split("-")[-2]) for c in consumers}

        async def both_work() -> bool:
            # Concurrent runs until the helper (still starting at first) has taken steps too.
            runs = await asyncio.gather(*(one_run(client, s) for _ in range(16)))
            # Each step's events once; how many answer batches the tokens make depends
            # on the host's pace, so they count as one.
            expected = ["run_started", "tool_call", "tool_result", "answer", "done"]
            assert all(types == expected for types in runs), runs
            return len(await researchers()) == 2

        await wait_for(both_work, within=60)
        busy = await client.xinfo_consumers("ab:{0}:role:researcher", "researcher")
        assert all(c["pending"] == 0 for c in busy)
        pids = await researchers()
        assert up.pid in pids  # up itself and one helper ran researcher steps
        await client.aclose()
        helper = next(pid for pid in pids if pid != up.pid)

        up.send_signal(signal.SIGKILL)  # the helper must not outlive it
        up.wait(10)

        async def helper_gone() -> bool:
            try:
                os.kill(helper, 0)
            except ProcessLookupError:
                return True
            return False

        await wait_for(helper_gone, within=15)


def api_child(pid: int) -> int:
    """The pid of ``agentbus api`` among the children of process ``pid`` (Linux /proc)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    (api,) = [int(c) for c in children if b"\0api" in Path(f"/proc/{c}/cmdline").read_bytes()]
    return api


async def test_up_stops_when_its_api_process_dies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, env = embedded_env(tmp_path, monkeypatch, AGENTBUS_LLM="scripted")
    log = tmp_path / "up.log"
    with processes() as procs:
        up = spawn(["up"], env, log)
        procs.append(up)
        await until_up(data, log, "web page")  # printed once the API process answers
        os.kill(api_child(up.pid), signal.SIGKILL)
        # A half-running system is worse than none: up drains its workers and exits.
        assert up.wait(90) == 0
    assert "the API process exited" in log.read_text()


async def test_a_signal_stops_the_api_process_before_the_workers_drain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, env = embedded_env(tmp_path, monkeypatch, AGENTBUS_LLM="scripted")
    log = tmp_path / "up.log"
    with processes() as procs:
        up = spawn(["up"], env, log)
        procs.append(up)
        await until_up(data, log, "web page")
        api = api_child(up.pid)
        client = Redis.from_url(embedded.socket_url(data))
        # One long step in flight: the workers' drain waits for it.
        cmd = noop_command(hops=1, tokens=["a", "b"], work_s=30)
        await publish(client, cmd, BusSettings(data_dir=data))
        events = read_events(client, cmd.run_id, 0, block_ms=10_000)
        first = await anext(aiter(events))
        assert first[1].type != "done"

        up.send_signal(signal.SIGINT)  # to up alone, not to its process group

        async def api_gone() -> bool:
            return _state(api) == b"Z"

        await wait_for(api_gone, within=25)
        assert up.poll() is None  # still draining the step: the edge did not wait for it
        rest = [e async for _, e in events]
        assert rest[-1].type == "done"  # the step in flight was finished, not dropped
        await client.aclose()
        assert up.wait(60) == 0
    assert "the API process exited" not in log.read_text()  # a stop, not a crash


def _state(pid: int) -> bytes:
    """The process state letter from /proc/<pid>/stat (Z: exited, not yet reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except FileNotFoundError:
        return b"Z"
    return stat.rpartition(b")")[2].split()[0]
