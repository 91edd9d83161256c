"""End to end on a Redis Cluster: the API and every role as separate processes.

Runs in both modes over HTTP, a signed question published straight onto the bus (admission),
and the operator commands, all against the local cluster. The retrieval role and the
gateway share one process: both open the local vector folder, which one process may hold.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import signal
import time
from pathlib import Path

import httpx
import pytest
from redis.asyncio import Redis

from agentbus_bench.local_cluster import LocalCluster
from bus import keys
from bus.runtime.groups import group_stats
from bus.settings import CLUSTER_SHARDS
from bus.store.migrate import upgrade_async
from tests.processes import cli, free_port, processes, spawn
from tests.support import wait_for

#: One process each, but retrieval and the gateway (the local vector folder's holder).
PROCESSES = [
    ["intake"],
    ["planner"],
    ["retrieval", "gateway"],
    ["researcher"],
    ["critic"],
    ["verifier"],
    ["finalizer"],
    ["recorder"],
]


@pytest.mark.timeout(480)  # nine processes start on a small, shared machine
async def test_runs_in_both_modes_with_every_role_a_process(
    redis: Redis, cluster: LocalCluster, tmp_path: Path
) -> None:
    db = f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
    await upgrade_async(db)
    port = free_port()
    env = {
        "AGENTBUS_REDIS_URL": cluster.url,
        "AGENTBUS_REDIS_CLUSTER": "true",
        "AGENTBUS_REDIS_WAIT_REPLICAS": "1",
        "AGENTBUS_DATABASE_URL": db,
        "AGENTBUS_DATA_DIR": str(tmp_path / "data"),
        "AGENTBUS_LLM": "scripted",
        "AGENTBUS_READ_BLOCK_MS": "200",
    }
    with processes() as procs:
        for i, roles in enumerate(PROCESSES):
            procs.append(spawn(["worker", *roles], env, tmp_path / f"w{i}.log"))
        api = spawn(["api", "--port", str(port)], env, tmp_path / "api.log")
        procs.append(api)
        key = (await cli(["keys", "create", "--tenant", "acme", "--subject", "ops"], env)).strip()
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:

            async def ready() -> bool:
                try:
                    return (await http.get("/readyz")).status_code == 200
                except httpx.HTTPError:
                    return False

            await wait_for(ready, within=90, interval=0.2)
            # A role's group starts at "$" when its first worker starts (docs/delivery.md):
            # a command published before that is not that group's. Post once every role
            # process has created its groups, as a deployment must.
            await wait_for(lambda: groups_exist(redis), within=90, interval=0.2)
            auth = {"Authorization": f"Bearer {key}"}
            started = []
            for mode, accuracy in [("single", "standard"), ("multi", "accurate")] * 3:
                body = {"question": "23×19?", "settings": {"mode": mode, "accuracy": accuracy}}
                reply = await http.post("/api/v1/runs", json=body, headers=auth)
                assert reply.status_code == 202, reply.text
                started.append((mode, reply.json()["run_id"]))
            for mode, run_id in started:
                events = (await http.get(f"/api/v1/runs/{run_id}/events", headers=auth)).text
                assert '"type":"done"' in events and '"status":"done"' in events, (mode, events)
                assert events.count('"type":"done"') == 1
                if mode == "multi":
                    assert '"type":"critique"' in events or '"type":"verdict"' in events

                async def recorded(r: str = run_id) -> bool:
                    view = (await http.get(f"/api/v1/runs/{r}", headers=auth)).json()
                    return view["status"] == "done"

                await wait_for(recorded, within=30, interval=0.2)
        await signed_question_is_answered(redis, env)
        rows = [json.loads(line) for line in (await cli(["streams", "--json"], env)).splitlines()]
        shards = {r["stream"] for r in rows if r["group"] == "researcher"}
        assert len(shards) == CLUSTER_SHARDS  # the cluster's default shards
        assert all(r["pending"] == 0 for r in rows if r["group"] != "admission")
        assert "no dead letters" in await cli(["dlq", "list"], env)
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            assert proc.wait(40) == 0
    assert "agentbus api: stopped" in (tmp_path / "api.log").read_text()


async def groups_exist(redis: Redis) -> bool:
    """Whether every role process has created its groups on every shard."""
    for roles in PROCESSES:
        for role in roles:
            for shard in range(CLUSTER_SHARDS):
                if not await group_stats(redis, keys.role_stream(keys.Role(role), shard)):
                    return False
    return True


async def signed_question_is_answered(redis: Redis, env: dict[str, str]) -> None:
    """A question published straight onto the bus is admitted and answered."""
    made = json.loads(
        await cli(
            ["keys", "create", "--tenant", "acme", "--subject", "crm", "--json"],
            env,
        )
    )
    body = {"key_id": made["id"], "signed_at": int(time.time()), "question": "23×19?"}
    doc = json.dumps(body | {"reply_to": "crm.answers"}).encode()
    signature = hmac.new(made["signing_secret"].encode(), doc, hashlib.sha256).hexdigest()
    await redis.xadd(keys.QUESTIONS_STREAM, {"data": doc, "signature": signature})

    async def answered() -> bool:
        return await redis.xlen("crm.answers") > 0

    await wait_for(answered, within=90, interval=0.1)
    [(_, fields)] = await redis.xrange("crm.answers")
    assert json.loads(fields[b"data"])["status"] == "done"
