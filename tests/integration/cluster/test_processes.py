"""Worker processes on a Redis Cluster: SIGKILL of a worker mid-step, dead letters."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest
from redis.asyncio import Redis

from agentbus_bench.local_cluster import LocalCluster
from bus import keys
from bus.commands import Command
from bus.publish import publish
from bus.settings import CLUSTER_SHARDS, BusSettings
from bus.store.migrate import upgrade_async
from bus.transcript import fold
from tests.processes import cli, processes, spawn
from tests.support import events_of, noop_command, stream_commands, wait_for

NOOP = keys.Role.NOOP


@pytest.fixture
async def env(tmp_path: Path, cluster: LocalCluster) -> dict[str, str]:
    db = f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
    await upgrade_async(db)
    return {
        "AGENTBUS_REDIS_URL": cluster.url,
        "AGENTBUS_REDIS_CLUSTER": "true",
        "AGENTBUS_DATABASE_URL": db,
        "AGENTBUS_DATA_DIR": str(tmp_path / "data"),
        "AGENTBUS_CLAIM_IDLE_MS": "1000",
        "AGENTBUS_HEARTBEAT_MS": "200",
        "AGENTBUS_READ_BLOCK_MS": "100",
        "AGENTBUS_RETRY_BACKOFF_MS": "10",
    }


def spread(cmd: Command) -> Command:
    """The command on its run's shard among the cluster's default shards."""
    return cmd.model_copy(update={"shard": keys.shard_of(cmd.run_id, CLUSTER_SHARDS)})


async def pending_of(redis: Redis, pid: int) -> int:
    total = 0
    for shard in range(CLUSTER_SHARDS):
        try:
            rows = await redis.xinfo_consumers(keys.role_stream(NOOP, shard), "noop")
        except Exception:
            continue
        total += sum(int(c["pending"]) for c in rows if f"-{pid}-" in c["name"].decode())
    return total


async def groups_exist(redis: Redis) -> bool:
    try:
        groups = await redis.xinfo_groups(keys.role_stream(NOOP, CLUSTER_SHARDS - 1))
    except Exception:
        return False
    return any(g["name"] == b"noop" for g in groups)


async def run_done(redis: Redis, cmd: Command) -> bool:
    events = await events_of(redis, cmd.run_id, cmd.shard)
    return bool(events) and events[-1].type == "done"


async def test_sigkill_mid_step_another_replica_finishes_exactly_once(
    redis: Redis, env: dict[str, str], tmp_path: Path
) -> None:
    s = BusSettings(redis_cluster=True)
    tokens = ["alpha ", "beta ", "gamma ", "delta "]
    with processes() as procs:
        victim = spawn(["worker", "noop", "--concurrency", "8"], env, tmp_path / "a.log")
        procs.append(victim)
        await wait_for(lambda: groups_exist(redis), within=30)
        runs: list[Command] = []
        while len({c.shard for c in runs}) < CLUSTER_SHARDS:  # runs on every master
            runs = [spread(noop_command(hops=3, tokens=tokens, work_s=0.6)) for _ in range(8)]
        for cmd in runs:
            await publish(redis, cmd, s)
        await wait_for(lambda: _pending_at_least(redis, victim.pid, 3), within=30)
        await asyncio.sleep(0.3)  # mid-step: some tokens out, nothing committed
        victim.send_signal(signal.SIGKILL)
        victim.wait(10)
        procs.append(spawn(["worker", "noop", "--concurrency", "8"], env, tmp_path / "b.log"))
        for cmd in runs:
            await wait_for(lambda c=cmd: run_done(redis, c), within=60)

    retries = 0
    step_ids: list[str] = []
    for cmd in runs:
        events = await events_of(redis, cmd.run_id, cmd.shard)
        transcript = fold(events)
        assert transcript.status == "done"
        assert transcript.answer == "".join(tokens) * 3  # no duplicated text
        assert [e.type for e in events].count("done") == 1
        retries += transcript.retries
    for shard in {c.shard for c in runs}:
        step_ids += [c.step_id for c in await stream_commands(redis, NOOP, shard)]
        pending = await redis.xpending(keys.role_stream(NOOP, shard), "noop")
        assert pending["pending"] == 0
    assert retries >= 3, "the kill should have interrupted steps in flight"
    assert len(step_ids) == len(set(step_ids)) == 8 * 3  # no step's effect happened twice


async def test_poison_is_dead_lettered_and_the_cli_lists_it_on_the_cluster(
    redis: Redis, env: dict[str, str], tmp_path: Path
) -> None:
    s = BusSettings(redis_cluster=True)
    poison = spread(noop_command(fail_times=99))
    healthy = spread(noop_command(hops=2, tokens=["ok"]))
    with processes() as procs:
        procs.append(spawn(["worker", "noop"], env, tmp_path / "w.log"))
        await wait_for(lambda: groups_exist(redis), within=30)
        await publish(redis, poison, s)
        await publish(redis, healthy, s)
        await wait_for(lambda: run_done(redis, healthy), within=30)
        await wait_for(lambda: run_done(redis, poison), within=30)
    out = await cli(["dlq", "list", "--json"], env)
    assert poison.run_id in out and '"deliveries": 3' in out
    streams = await cli(["streams", "--json"], env)
    assert f'"stream": "{keys.role_stream(NOOP, poison.shard)}"' in streams
    dead_id = next(line for line in out.splitlines() if poison.run_id in line)
    assert "replayed" in await cli(["dlq", "replay", dead_id.split('"')[3]], env)


async def _pending_at_least(redis: Redis, pid: int, n: int) -> bool:
    return await pending_of(redis, pid) >= n
