"""A backup taken before a user's erasure, restored: the user stays erased.

`agentbus up` runs; alice and bob (one tenant) each ask a question; `agentbus backup`
copies everything; `agentbus erase` erases alice; `up` stops and `agentbus restore` brings
the backup back. The restore replays the erasure ledger, so once `up` runs again alice's
key, run and conversation are gone, as after the erasure, while bob's are there.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tests.e2e.test_backup_restore import _stop  # pyright: ignore[reportPrivateUsage]
from tests.e2e.test_multitask_processes import ready
from tests.e2e.test_up import embedded_env, until_up
from tests.processes import cli, free_port, processes, spawn
from tests.support import wait_for


async def _key(env: dict[str, str], subject: str) -> str:
    out = await cli(["keys", "create", "--tenant", "t1", "--subject", subject, "--json"], env)
    return str(json.loads(out)["key"])


async def _ask(http: httpx.AsyncClient, key: str, question: str) -> str:
    headers = {"Authorization": f"Bearer {key}"}
    started = await http.post("/api/v1/runs", json={"question": question}, headers=headers)
    assert started.status_code == 202, started.text
    run_id = str(started.json()["run_id"])

    async def done() -> bool:
        got = await http.get(f"/api/v1/runs/{run_id}", headers=headers)
        return got.json()["status"] == "done"

    await wait_for(done, within=90, interval=0.2)
    return run_id


@pytest.mark.timeout(600)
async def test_a_backup_taken_before_an_erasure_restores_without_the_erased_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()
    data, env = embedded_env(
        tmp_path,
        monkeypatch,
        AGENTBUS_LLM="scripted",
        AGENTBUS_API_PORT=str(port),
        AGENTBUS_TENANT="t1",  # the local admin key's tenant
    )
    backup = tmp_path / "backup"
    base = f"http://127.0.0.1:{port}"
    with processes() as procs:
        first = spawn(["up"], env, tmp_path / "up1.log")
        procs.append(first)
        await until_up(data, tmp_path / "up1.log")
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            await wait_for(lambda: ready(http), within=90, interval=0.2)
            alice, bob = await _key(env, "alice"), await _key(env, "bob")
            hers = await _ask(http, alice, "What is 23 × 19? asks alice about tapirs")
            his = await _ask(http, bob, "What is 23 × 19? asks bob about llamas")

            await cli(["backup", str(backup)], env)
            erased = json.loads(
                await cli(["erase", "--user", "alice", "--tenant", "t1", "--json"], env)
            )
            assert erased["erased"]["runs"] == 1
            gone = await http.get("/api/v1/runs", headers={"Authorization": f"Bearer {alice}"})
            assert gone.status_code == 401
        await _stop(first)

        restored = await cli(["restore", str(backup)], env)

        second = spawn(["up"], env, tmp_path / "up2.log")
        procs.append(second)
        await until_up(data, tmp_path / "up2.log")
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            await wait_for(lambda: ready(http), within=90, interval=0.2)
            root = (data / "local-api-key").read_text().strip()
            admin = {"Authorization": f"Bearer {root}"}
            her_key = await http.get("/api/v1/runs", headers={"Authorization": f"Bearer {alice}"})
            her_run = await http.get(f"/api/v1/runs/{hers}", headers=admin)
            his_run = await http.get(
                f"/api/v1/runs/{his}", headers={"Authorization": f"Bearer {bob}"}
            )
            listed = await http.get("/api/v1/runs", headers=admin)
        await _stop(second)

    assert her_key.status_code == 401
    assert her_run.status_code == 404
    assert "erased again 1 user" in restored
    assert his_run.status_code == 200 and his_run.json()["question"].endswith("llamas")
    assert "tapirs" not in listed.text
    ledger = (data / "erasures.jsonl").read_text()
    assert "alice" not in ledger and erased["subject_digest"] in ledger
