"""`agentbus api` beside `agentbus up`, driven over HTTP as a user would."""

from __future__ import annotations

import os
import signal
import socket
from pathlib import Path

import httpx
import pytest

from bus import embedded
from tests.processes import cli, processes, spawn
from tests.support import wait_for


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_api_serves_runs_from_a_cli_created_key_and_stops_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in [k for k in os.environ if k.startswith("AGENTBUS_")]:
        monkeypatch.delenv(key)
    data, port = tmp_path / "data", free_port()
    env = {"AGENTBUS_DATA_DIR": str(data), "AGENTBUS_LLM": "scripted", "AGENTBUS_API_PORT": "0"}
    base = f"http://127.0.0.1:{port}"
    with processes() as procs:
        procs.append(spawn(["up"], env, tmp_path / "up.log"))

        async def redis_up() -> bool:
            return embedded.is_running(data) and "roles:" in (tmp_path / "up.log").read_text()

        await wait_for(redis_up, within=60)
        api = spawn(["api", "--port", str(port)], env, tmp_path / "api.log")
        procs.append(api)
        key = (await cli(["keys", "create", "--tenant", "acme", "--subject", "ops"], env)).strip()
        listed = await cli(["keys", "list", "--tenant", "acme"], env)

        async with httpx.AsyncClient(base_url=base, timeout=30) as http:

            async def ready() -> bool:
                try:
                    return (await http.get("/readyz")).status_code == 200
                except httpx.HTTPError:
                    return False

            await wait_for(ready, within=60, interval=0.2)
            auth = {"Authorization": f"Bearer {key}"}
            run = (
                await http.post("/api/v1/runs", json={"question": "23×19?"}, headers=auth)
            ).json()
            events = (await http.get(f"/api/v1/runs/{run['run_id']}/events", headers=auth)).text

        assert "acme" in listed and '"type":"done"' in events and '"status":"done"' in events
        api.send_signal(signal.SIGTERM)
        assert api.wait(30) == 0
        assert "agentbus api: stopped" in (tmp_path / "api.log").read_text()
        procs[0].send_signal(signal.SIGTERM)
        assert procs[0].wait(30) == 0
