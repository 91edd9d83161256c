"""Hop benchmark: a chain of no-op steps over a real Redis (``agentbus bench hop``).

Two phases, one worker process:
* latency: one run at a time, each a chain of ``hops`` steps; per-hop latency is the
  run's wall time divided by its steps (publish → ``done`` event).
* throughput: ``runs`` chains in flight at once, the worker at ``concurrency``.

With ``processes`` > 1, that many - 1 ``agentbus worker noop`` processes share the steps.
On a Redis Cluster (``--redis-cluster``) runs spread over the shards as the API spreads them.
"""

from __future__ import annotations

import asyncio
import json
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from agentbus_bench.deployment import Deployment, temporary_data
from api.cli.common import loop_factory
from api.compose.connection import connect
from bus import keys, typed_redis
from bus.commands import Command, NoopTask, deadline_in, new_run_id
from bus.noop import handle_noop
from bus.publish import publish
from bus.runtime.runner import Runner
from bus.runtime.worker import Worker
from bus.settings import BusSettings

if TYPE_CHECKING:
    from redis.asyncio import Redis


def _command(hops: int, shards: int) -> Command:
    run_id = new_run_id()
    return Command(
        run_id=run_id,
        shard=keys.shard_of(run_id, shards),
        tenant_id="bench",
        subject="bench",
        role=keys.Role.NOOP,
        deadline=deadline_in(600),
        payload=NoopTask(hops_left=hops - 1, sent_at=time.time()),
    )


async def _wait_done(redis: Redis, command: Command) -> None:
    stream, last = keys.run_events(command.run_id, command.shard), "0-0"
    while True:
        resp = await typed_redis.commands(redis).xread({stream: last}, block=5000)
        for _, entries in resp:
            for entry_id, fields in entries:
                last = entry_id.decode()
                if b'"type":"done"' in fields[b"data"]:
                    return


@contextmanager
def _helpers(
    count: int, settings: BusSettings, url: str, concurrency: int
) -> Generator[list[subprocess.Popen[bytes]], None, None]:
    """``count`` ``agentbus worker noop`` processes on ``url``; SIGTERM (drain) on exit."""
    deployment = Deployment(url, settings.redis_cluster, settings.database_url)
    env = deployment.env(settings.data_dir)
    env.update(AGENTBUS_LOG_LEVEL="warning", AGENTBUS_CLAIM_IDLE_MS=str(settings.claim_idle_ms))
    agentbus = str(Path(sys.executable).with_name("agentbus"))
    command = [agentbus, "worker", "noop", "--concurrency", str(concurrency)]
    procs = [subprocess.Popen(command, env=env) for _ in range(count)]
    try:
        yield procs
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


async def run_hop_bench(
    settings: BusSettings,
    *,
    hops: int,
    latency_runs: int,
    runs: int,
    concurrency: int,
    processes: int = 1,
) -> dict[str, float | int | str]:
    """Run both phases and return the figures."""
    async with connect(settings, embedded=True) as conn:
        redis = conn.redis
        worker = Worker(keys.Role.NOOP, handle_noop, redis, settings, concurrency=concurrency)
        await worker.ensure_groups()
        runner = Runner([worker], redis, stats_interval_s=3600)
        task = asyncio.create_task(runner.run())
        with _helpers(processes - 1, settings, conn.url, concurrency):
            per_hop: list[float] = []
            for _ in range(latency_runs):
                command = _command(hops, settings.shards)
                started = time.perf_counter()
                await publish(redis, command, settings)
                await _wait_done(redis, command)
                per_hop.append((time.perf_counter() - started) / hops * 1000)
            commands = [_command(hops, settings.shards) for _ in range(runs)]
            started = time.perf_counter()
            async with redis.pipeline(transaction=False) as pipe:
                for c in commands:
                    pipe.xadd(keys.role_stream(c.role, c.shard), {"data": c.model_dump_json()})
                await pipe.execute()
            for c in commands:
                await _wait_done(redis, c)
            elapsed = time.perf_counter() - started
        runner.stop()
        await task
        info = await typed_redis.commands(redis).info("server")
        # A cluster client answers per node: {node: {...}}.
        server = info.get("redis_version") or next(iter(info.values()))["redis_version"]
    per_hop.sort()
    return {
        "hops_per_s": round(runs * hops / elapsed, 1),
        "p50_ms": round(statistics.median(per_hop), 3),
        "p99_ms": round(per_hop[min(len(per_hop) - 1, int(len(per_hop) * 0.99))], 3),
        "hops": hops,
        "latency_runs": latency_runs,
        "runs": runs,
        "concurrency": concurrency,
        "redis_version": server,
    }


def main(
    *,
    redis_url: str | None,
    hops: int,
    latency_runs: int,
    runs: int,
    concurrency: int,
    as_json: bool,
    deployment: Deployment | None = None,
    processes: int = 1,
) -> None:
    """Entry point for ``agentbus bench hop``."""
    target = deployment or Deployment(redis_url=redis_url)
    with temporary_data() as tmp, target.started(Path(tmp)) as target:
        settings = BusSettings(
            redis_url=target.redis_url,
            redis_cluster=target.redis_cluster,
            data_dir=Path(tmp),
            read_block_ms=1000,
            claim_idle_ms=60_000,
        )
        with asyncio.Runner(loop_factory=loop_factory()) as runner:
            figures = runner.run(
                run_hop_bench(
                    settings,
                    hops=hops,
                    latency_runs=latency_runs,
                    runs=runs,
                    concurrency=concurrency,
                    processes=processes,
                )
            )
    figures = {"redis": target.describe(store=False), "processes": processes, **figures}
    if as_json:
        print(json.dumps(figures))
    else:
        for k, v in figures.items():
            print(f"{k:>14}: {v}")
