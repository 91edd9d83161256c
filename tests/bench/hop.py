"""Hop benchmark: a chain of no-op steps over a real Redis (``agentbus bench hop``).

Two phases, one worker process:
* latency: one run at a time, each a chain of ``hops`` steps; per-hop latency is the
  run's wall time divided by its steps (publish → ``done`` event).
* throughput: ``runs`` chains in flight at once, the worker at ``concurrency``.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

from api.cli.common import loop_factory
from api.compose.connection import connect
from bus import keys
from bus.commands import Command, NoopTask, deadline_in, new_run_id
from bus.noop import handle_noop
from bus.publish import publish
from bus.runtime.runner import Runner
from bus.runtime.worker import Worker
from bus.settings import BusSettings


def _command(hops: int) -> Command:
    return Command(
        run_id=new_run_id(),
        tenant_id="bench",
        subject="bench",
        role=keys.Role.NOOP,
        deadline=deadline_in(600),
        payload=NoopTask(hops_left=hops - 1, sent_at=time.time()),
    )


async def _wait_done(redis, run_id: str) -> None:  # type: ignore[no-untyped-def]
    stream, last = keys.run_events(run_id, 0), "0-0"
    while True:
        resp = await redis.xread({stream: last}, block=5000)
        for _, entries in resp:
            for entry_id, fields in entries:
                last = entry_id
                if b'"type":"done"' in fields[b"data"]:
                    return


async def run_hop_bench(
    settings: BusSettings, *, hops: int, latency_runs: int, runs: int, concurrency: int
) -> dict[str, float | int | str]:
    """Run both phases and return the figures."""
    async with connect(settings, embedded=True) as conn:
        redis = conn.redis
        worker = Worker(keys.Role.NOOP, handle_noop, redis, settings, concurrency=concurrency)
        await worker.ensure_groups()
        runner = Runner([worker], redis, stats_interval_s=3600)
        task = asyncio.create_task(runner.run())
        per_hop: list[float] = []
        for _ in range(latency_runs):
            command = _command(hops)
            started = time.perf_counter()
            await publish(redis, command, settings)
            await _wait_done(redis, command.run_id)
            per_hop.append((time.perf_counter() - started) / hops * 1000)
        commands = [_command(hops) for _ in range(runs)]
        started = time.perf_counter()
        async with redis.pipeline(transaction=False) as pipe:
            for c in commands:
                pipe.xadd(keys.role_stream(c.role, 0), {"data": c.model_dump_json()})
            await pipe.execute()
        for c in commands:
            await _wait_done(redis, c.run_id)
        elapsed = time.perf_counter() - started
        runner.stop()
        await task
        server = (await redis.info("server"))["redis_version"]
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
) -> None:
    """Entry point for ``agentbus bench hop``."""
    with tempfile.TemporaryDirectory() as tmp:
        settings = BusSettings(
            redis_url=redis_url, data_dir=Path(tmp), read_block_ms=1000, claim_idle_ms=60_000
        )
        with asyncio.Runner(loop_factory=loop_factory()) as runner:
            figures = runner.run(
                run_hop_bench(
                    settings,
                    hops=hops,
                    latency_runs=latency_runs,
                    runs=runs,
                    concurrency=concurrency,
                )
            )
    if as_json:
        print(json.dumps(figures))
    else:
        for k, v in figures.items():
            print(f"{k:>14}: {v}")
