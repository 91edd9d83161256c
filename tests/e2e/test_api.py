"""`agentbus api` beside `agentbus up`, driven over HTTP as a user would."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import signal
import time
from pathlib import Path

import httpx
import pytest
from redis.asyncio import Redis

from bus import embedded, keys
from tests.e2e.test_up import until_up
from tests.processes import cli, free_port, processes, spawn
from tests.support import wait_for


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
        await until_up(data, tmp_path / "up.log")
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
        await signed_question_is_answered(data, env)
        api.send_signal(signal.SIGTERM)
        assert api.wait(30) == 0
        assert "agentbus api: stopped" in (tmp_path / "api.log").read_text()
        procs[0].send_signal(signal.SIGTERM)
        assert procs[0].wait(30) == 0


async def signed_question_is_answered(data: Path, env: dict[str, str]) -> None:
    """A key made by the CLI signs a runs.questions entry that the API processes verify:
    every process on the data folder derives the same signing secret."""
    made = json.loads(
        await cli(
            ["keys", "create", "--tenant", "acme", "--subject", "crm", "--group", "ops", "--json"],
            env,
        )
    )
    assert made["groups"] == ["ops"] and made["signing_secret"] and "key_hash" not in made
    body = {"key_id": made["id"], "signed_at": int(time.time()), "question": "23×19?"}
    doc = json.dumps(body | {"reply_to": "crm.answers"}).encode()
    signature = hmac.new(made["signing_secret"].encode(), doc, hashlib.sha256).hexdigest()
    redis = Redis.from_url(embedded.socket_url(data))
    try:
        await redis.xadd(keys.QUESTIONS_STREAM, {"data": doc, "signature": signature})

        async def answered() -> bool:
            return await redis.xlen("crm.answers") > 0

        await wait_for(answered, within=60, interval=0.1)
        [(_, fields)] = await redis.xrange("crm.answers")
        assert json.loads(fields[b"data"])["status"] == "done"
        assert await redis.xlen(keys.QUESTIONS_STREAM) == 0
    finally:
        await redis.aclose()
