"""A master killed mid-load: its replica takes over; what was lost is counted.

Workers commit steps of many runs spread over every master; one master is SIGKILLed while
steps are in flight, the cluster promotes its replica, and the killed node comes back as a
replica. A commit the worker took as done (`COMMITTED`) and that is later run and
committed again was lost in the failover. Without ``redis_wait_replicas`` such losses may
happen (Redis replicates asynchronously); with ``redis_wait_replicas=1`` none may: a commit
counts only once a replica holds it. Either way every run ends, with one ``done``.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable
from typing import Any

import pytest
from redis.asyncio import Redis

from agentbus_bench.local_cluster import LocalCluster
from api.compose.settings import AppSettings
from bus import keys
from bus.commands import Command
from bus.publish import publish
from bus.runtime.commit import COMMITTED, Committer, Prepared
from bus.runtime.consumer import Entry
from bus.transcript import fold
from tests.support import events_of, noop_command, running, wait_for
from tests.unit.bus.test_runtime import noop_worker

RUNS, HOPS = 48, 8


@pytest.mark.timeout(300)
@pytest.mark.parametrize("wait_replicas", [0, 1])
async def test_master_killed_mid_load_every_run_ends_once(
    redis: Redis,
    cluster: LocalCluster,
    make_settings: Callable[..., AppSettings],
    wait_replicas: int,
) -> None:
    s = make_settings(
        redis_cluster=True,
        redis_wait_replicas=wait_replicas,
        redis_wait_timeout_ms=500,
        # A failover takes a few seconds; each claim-idle period in it costs the steps in
        # flight a delivery, so the delivery cap is set above what it can cost here.
        claim_idle_ms=3000,
        max_deliveries=10,
        heartbeat_ms=200,
        read_block_ms=100,
    ).bus
    acked: collections.Counter[str] = collections.Counter()
    original = Committer.commit

    async def counting(self: Committer, entry: Entry, command: Command, prep: Prepared) -> int:
        done = await original(self, entry, command, prep)
        if done == COMMITTED:
            acked[command.step_id] += 1
        return done

    workers = [noop_worker(redis, s, concurrency=16) for _ in range(2)]
    for w in workers:
        w._committer.commit = counting.__get__(w._committer)  # type: ignore[method-assign]  # pyright: ignore[reportPrivateUsage, reportAttributeAccessIssue]
    runs: list[Command] = []
    for _ in range(RUNS):
        cmd = noop_command(hops=HOPS, tokens=["t"], work_s=0.02, deadline_s=240)
        runs.append(cmd.model_copy(update={"shard": keys.shard_of(cmd.run_id, s.shards)}))
    victim = cluster.master_of(keys.role_stream(keys.Role.NOOP, runs[0].shard))
    replica = cluster.replica_of(victim)
    for w in workers:
        await w.ensure_groups()
    async with running(workers, redis):
        for cmd in runs:
            await publish(redis, cmd, s)

        async def third_done() -> bool:
            return sum(acked.values()) >= RUNS * HOPS // 3

        await wait_for(third_done, within=60)
        cluster.kill(victim)  # steps in flight on it; its replica takes over

        async def promoted() -> bool:
            return victim not in cluster.master_ports() and replica in cluster.master_ports()

        await wait_for(promoted, within=30, interval=0.1)
        cluster.start_node(victim)  # rejoins as the new master's replica
        for cmd in runs:
            await wait_for(lambda c=cmd: _ended(redis, c), within=120, interval=0.1)
    await asyncio.to_thread(cluster.wait_ok)

    lost = sum(n - 1 for n in acked.values() if n > 1)
    done_counts = []
    for cmd in runs:
        events = await events_of(redis, cmd.run_id, cmd.shard)
        done_counts.append([e.type for e in events].count("done"))
        assert fold(events).status == "done"
    report: dict[str, Any] = {
        "wait_replicas": wait_replicas,
        "runs": RUNS,
        "steps_acknowledged": sum(acked.values()),
        "acknowledged_then_lost": lost,
        "killed_master": victim,
    }
    print(f"failover: {report}")
    assert done_counts == [1] * RUNS  # every run ended, none twice
    if wait_replicas:
        assert lost == 0, f"with WAIT no acknowledged commit may be lost: {report}"


async def _ended(redis: Redis, cmd: Command) -> bool:
    try:
        events = await events_of(redis, cmd.run_id, cmd.shard)
    except Exception:  # the slot's master is failing over
        return False
    return bool(events) and events[-1].type == "done"
