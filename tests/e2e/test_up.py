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
from bus.settings import Settings
from tests.processes import cli, processes, spawn
from tests.support import noop_command, wait_for


async def test_up_starts_everything_and_stops_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in [k for k in os.environ if k.startswith("AGENTBUS_")]:
        monkeypatch.delenv(key)  # embedded defaults: nothing configured
    data = tmp_path / "data"
    env = {"AGENTBUS_DATA_DIR": str(data)}
    with processes() as procs:
        up = spawn(["up"], env, tmp_path / "up.log")
        procs.append(up)

        async def ready() -> bool:
            return embedded.is_running(data) and "roles:" in (tmp_path / "up.log").read_text()

        await wait_for(ready, within=30)
        assert (data / "agentbus.db").exists()  # the store was created and migrated

        s = Settings(data_dir=data)
        client = Redis.from_url(embedded.socket_url(data))
        cmd = noop_command(hops=3, tokens=["hi"])
        await publish(client, cmd, s)
        events = [e async for _, e in read_events(client, cmd.run_id, 0, block_ms=5000)]
        assert events[-1].type == "done"
        await client.aclose()

        rows = [json.loads(line) for line in (await cli(["streams", "--json"], env)).splitlines()]
        assert any(r["group"] == "noop" and r["pending"] == 0 for r in rows)

        up.send_signal(signal.SIGTERM)
        assert up.wait(30) == 0
    await asyncio.sleep(0.1)
    assert not embedded.is_running(data)  # the embedded Redis stopped with it
