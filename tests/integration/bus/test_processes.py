"""Worker processes over a real Redis: SIGKILL mid-step, poison, SIGTERM drain, burst."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest
from redis.asyncio import Redis

from bus import keys
from bus.publish import publish
from bus.settings import BusSettings
from bus.store.migrate import upgrade_async
from bus.transcript import fold
from tests.conftest import TEST_REDIS_URL
from tests.processes import cli, processes, spawn
from tests.support import events_of, noop_command, stream_commands, wait_for

NOOP = keys.Role.NOOP
STREAM = keys.role_stream(NOOP, 0)


@pytest.fixture
async def env(tmp_path: Path) -> dict[str, str]:
    db = f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
    await upgrade_async(db)
    return {
        "AGENTBUS_REDIS_URL": TEST_REDIS_URL,
        "AGENTBUS_DATABASE_URL": db,
        "AGENTBUS_DATA_DIR": str(tmp_path / "data"),
        "AGENTBUS_CLAIM_IDLE_MS": "1000",
        "AGENTBUS_HEARTBEAT_MS": "200",
        "AGENTBUS_READ_BLOCK_MS": "100",
        "AGENTBUS_RETRY_BACKOFF_MS": "10",
    }


async def consumer_pending(redis: Redis, pid: int) -> int:
    rows = await redis.xinfo_consumers(STREAM, "noop")
    return sum(int(c["pending"]) for c in rows if f"-{pid}-" in c["name"].decode())


async def run_done(redis: Redis, run_id: str) -> bool:
    events = await events_of(redis, run_id)
    return bool(events) and events[-1].type == "done"


async def test_sigkill_mid_step_another_replica_finishes_exactly_once(
    real_redis: Redis, env: dict[str, str], tmp_path: Path
) -> None:
    s = BusSettings(redis_url=TEST_REDIS_URL)
    tokens = ["alpha ", "beta ", "gamma ", "delta "]
    with processes() as procs:
        victim = spawn(["worker", "noop", "--concurrency", "4"], env, tmp_path / "a.log")
        procs.append(victim)
        await wait_for(lambda: _group_exists(real_redis), within=60)  # startup under load
        runs = [noop_command(hops=3, tokens=tokens, work_s=0.6) for _ in range(6)]
        for cmd in runs:
            await publish(real_redis, cmd, s)
        await wait_for(lambda: _pending_at_least(real_redis, victim.pid, 2))
        await asyncio.sleep(0.3)  # mid-step: some tokens out, nothing committed
        victim.send_signal(signal.SIGKILL)
        victim.wait(10)
        procs.append(spawn(["worker", "noop", "--concurrency", "4"], env, tmp_path / "b.log"))
        for cmd in runs:
            await wait_for(lambda c=cmd: run_done(real_redis, c.run_id), within=40)

    retries = 0
    for cmd in runs:
        events = await events_of(real_redis, cmd.run_id)
        transcript = fold(events)
        assert transcript.status == "done"
        assert transcript.answer == "".join(tokens) * 3  # no duplicated text
        assert [e.type for e in events].count("done") == 1
        retries += transcript.retries
    assert retries >= 2, "the kill should have interrupted steps in flight"
    step_ids = [c.step_id for c in await stream_commands(real_redis, NOOP)]
    assert len(step_ids) == len(set(step_ids)) == 6 * 3  # no step's effect happened twice
    assert (await real_redis.xpending(STREAM, "noop"))["pending"] == 0


async def test_poison_message_dead_lettered_by_a_worker_process_others_complete(
    real_redis: Redis, env: dict[str, str], tmp_path: Path
) -> None:
    s = BusSettings(redis_url=TEST_REDIS_URL)
    poison, healthy = noop_command(fail_times=99), noop_command(hops=2, tokens=["ok"])
    with processes() as procs:
        procs.append(spawn(["worker", "noop"], env, tmp_path / "w.log"))
        await wait_for(lambda: _group_exists(real_redis), within=60)  # startup under load
        await publish(real_redis, poison, s)
        await publish(real_redis, healthy, s)
        await wait_for(lambda: run_done(real_redis, healthy.run_id), within=20)
        await wait_for(lambda: run_done(real_redis, poison.run_id), within=20)
    out = await cli(["dlq", "list", "--json"], env)
    assert poison.run_id in out and '"deliveries": 3' in out
    assert fold(await events_of(real_redis, healthy.run_id)).answer == "okok"


async def test_sigterm_drains_in_flight_step_then_burst_finishes(
    real_redis: Redis, env: dict[str, str], tmp_path: Path
) -> None:
    s = BusSettings(redis_url=TEST_REDIS_URL)
    cmd = noop_command(hops=2, tokens=["one ", "two "], work_s=1.0)
    with processes() as procs:
        worker = spawn(["worker", "noop"], env, tmp_path / "w.log")
        procs.append(worker)
        await wait_for(lambda: _group_exists(real_redis), within=60)  # startup under load
        await publish(real_redis, cmd, s)
        await wait_for(lambda: _pending_at_least(real_redis, worker.pid, 1))
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(15) == 0
        # The in-flight step finished and committed; the next one waits, unread.
        assert (await real_redis.xpending(STREAM, "noop"))["pending"] == 0
        assert len(await stream_commands(real_redis, NOOP)) == 2
        assert not await run_done(real_redis, cmd.run_id)

        burst = spawn(["worker", "noop", "--burst"], env, tmp_path / "burst.log")
        procs.append(burst)
        assert burst.wait(20) == 0  # drains the stream, then exits by itself
    events = await events_of(real_redis, cmd.run_id)
    assert fold(events).answer == "one two " * 2
    assert events[-1].type == "done"


async def _group_exists(redis: Redis) -> bool:
    try:
        return any(g["name"] == b"noop" for g in await redis.xinfo_groups(STREAM))
    except Exception:
        return False


async def _pending_at_least(redis: Redis, pid: int, n: int) -> bool:
    return await consumer_pending(redis, pid) >= n
