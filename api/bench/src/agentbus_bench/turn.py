"""Turn benchmark: whole runs through ``agentbus up`` with the scripted model.

A turn: the model calls the calculator, the gateway runs it, the model streams a 40-token
answer, the finalizer persists it. Zero model latency by default, so the figures are
agentbus's own overhead; ``model_latency`` makes each model call wait as a real one would.
``agentbus up`` runs as a separate process on a temporary data folder, on the embedded
defaults or the Redis / cluster / database a `Deployment` names.
"""

from __future__ import annotations

import asyncio
import json
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import cast

from redis.asyncio import Redis

from agentbus_bench.deployment import (
    Deployment,
    close_client,
    cpu_seconds,
    open_client,
    peak_rss_mb,
    temporary_data,
    wait_for_up,
)
from api.cli.common import loop_factory
from bus import keys
from bus.commands import AgentTask, Command, RunSettings, RunState, deadline_in, new_run_id
from bus.publish import publish
from bus.settings import BusSettings


def _command(mode: str, accuracy: str = "standard", shards: int = 1) -> Command:
    run_id = new_run_id()
    return Command(
        run_id=run_id,
        shard=keys.shard_of(run_id, shards),
        tenant_id="bench",
        subject="bench",
        role=keys.Role.INTAKE,
        deadline=deadline_in(600),
        payload=AgentTask(
            # The benchmark turn has no fact-check: plan, tool call, answer, critique, verdict.
            state=RunState(
                question="What is 23 × 19?",
                settings=RunSettings(mode=mode, accuracy=accuracy, verifier_check=False),  # type: ignore[arg-type]
            )
        ),
    )


async def _one_run(
    redis: Redis, settings: BusSettings, mode: str, accuracy: str = "standard"
) -> tuple[float, int, bool]:
    """(ms from publish to ``done``, events seen, whether the run ended ``done``)."""
    command = _command(mode, accuracy, settings.shards)
    stream, last, count = keys.run_events(command.run_id, command.shard), "0-0", 0
    started = time.perf_counter()
    await publish(redis, command, settings)
    while True:
        for _, entries in await redis.xread({stream: last}, block=10_000) or ():
            for entry_id, fields in entries:
                last, count = entry_id, count + 1
                if b'"type":"done"' in fields[b"data"]:
                    ok = json.loads(fields[b"data"]).get("status") == "done"
                    return (time.perf_counter() - started) * 1000, count, ok


async def _redis_calls(redis: Redis) -> int:
    """Commands the Redis server has run since it started (INFO commandstats; on a
    cluster, every node's, which the client gives per node)."""
    stats: object = await redis.info("commandstats")  # pyright: ignore[reportUnknownMemberType]
    return _calls(stats)


def _calls(stats: object) -> int:
    if not isinstance(stats, dict):
        return 0
    if "calls" in stats:
        return int(cast("dict[str, int]", stats)["calls"])
    return sum(_calls(v) for v in cast("dict[str, object]", stats).values())


def _pct(ordered: list[float], q: float) -> float:
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * q))], 2) if ordered else 0.0


async def drive(
    settings: BusSettings,
    *,
    mode: str,
    runs: int,
    concurrency: int,
    accuracy: str = "standard",
    latency_runs: int | None = None,
) -> dict[str, float | int]:
    """Measure latency at concurrency 1 (``latency_runs``, default ``min(runs, 200)``),
    then throughput at ``concurrency`` (with the latency of those runs under load)."""
    redis = await open_client(settings)
    for _ in range(5):  # warm-up: imports, first SQL connection, script load
        await _one_run(redis, settings, mode, accuracy)
    calls_before = await _redis_calls(redis)
    sequential = min(runs, 200) if latency_runs is None else latency_runs
    latencies = [(await _one_run(redis, settings, mode, accuracy))[0] for _ in range(sequential)]
    pending = list(range(runs))
    events: list[int] = []
    loaded: list[float] = []
    failed = 0

    async def client() -> None:
        nonlocal failed
        while pending:
            pending.pop()
            ms, count, ok = await _one_run(redis, settings, mode, accuracy)
            events.append(count)
            loaded.append(ms)
            failed += not ok

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    calls = await _redis_calls(redis) - calls_before
    await close_client(redis)
    latencies.sort()
    loaded.sort()
    return {
        "runs_per_s": round(runs / elapsed, 1),
        "p50_ms": round(statistics.median(latencies), 2) if latencies else 0.0,
        "p99_ms": _pct(latencies, 0.99),
        "loaded_p50_ms": _pct(loaded, 0.5),
        "loaded_p99_ms": _pct(loaded, 0.99),
        "events_per_run": round(statistics.mean(events), 1),
        # Every command Redis ran (inside scripts too, and the driving client's own): exact
        # on the temporary embedded Redis; others' commands count too on a shared one.
        "redis_commands_per_run": round(calls / (sequential + runs), 1),
        "runs": runs,
        "runs_not_done": failed,
        "concurrency": concurrency,
    }


def measure(
    *,
    mode: str,
    accuracy: str,
    runs: int,
    concurrency: int,
    processes: int = 1,
    deployment: Deployment | None = None,
    model_latency: float = 0.0,
    latency_runs: int | None = None,
) -> dict[str, object]:
    """Start ``agentbus up``, drive it, stop it; the figures `main` prints."""
    target = deployment or Deployment()
    with temporary_data() as tmp, target.started(Path(tmp)) as target:
        data = Path(tmp)
        env = target.env(data)
        env.update(
            AGENTBUS_LLM="scripted",
            AGENTBUS_LLM_LATENCY_S=str(model_latency),
            AGENTBUS_LOG_LEVEL="warning",
            AGENTBUS_API_PORT="0",
            # Runs here outlive the default deadline only when the host is overloaded.
            AGENTBUS_RUN_DEADLINE_S=str(max(300.0, 60 * model_latency)),
        )
        agentbus = str(Path(sys.executable).with_name("agentbus"))
        log = data / "up.log"
        with log.open("wb") as out:
            up = subprocess.Popen(
                [
                    agentbus,
                    "up",
                    "--concurrency",
                    str(max(8, concurrency)),
                    "--processes",
                    str(processes),
                ],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            wait_for_up(up, log, within=300)
            time.sleep(0.5)
            cpu_before = cpu_seconds(up.pid)
            own_before = time.process_time()
            with asyncio.Runner(loop_factory=loop_factory()) as runner:
                figures = runner.run(
                    drive(
                        target.settings(data),
                        mode=mode,
                        accuracy=accuracy,
                        runs=runs,
                        concurrency=concurrency,
                        latency_runs=latency_runs,
                    )
                )
            rss = peak_rss_mb(up.pid)
            # Every run driven: warm-up (5), one at a time, under load. Load-independent
            # where wall-clock figures are not: CPU per run of each process.
            driven = (
                5
                + int(figures["runs"])
                + (min(runs, 200) if latency_runs is None else latency_runs)
            )
            cpu = {
                name: round((used - cpu_before.get(name, 0.0)) * 1000 / driven, 2)
                for name, used in cpu_seconds(up.pid).items()
            }
            # The driving client shares the cores: on 2 cores its CPU bounds the rest.
            cpu["bench"] = round((time.process_time() - own_before) * 1000 / driven, 2)
        finally:
            up.send_signal(signal.SIGTERM)
            try:
                up.wait(60)
            except subprocess.TimeoutExpired:
                up.kill()
                up.wait(10)
    return {
        "mode": mode,
        "accuracy": accuracy,
        "deployment": target.describe(),
        "processes": processes,
        "model_latency_s": model_latency,
        **figures,
        "peak_rss_mb": rss,
        "cpu_ms_per_run": cpu,
    }


def main(
    *,
    mode: str,
    accuracy: str,
    runs: int,
    concurrency: int,
    processes: int = 1,
    as_json: bool,
    deployment: Deployment | None = None,
    model_latency: float = 0.0,
    latency_runs: int | None = None,
) -> None:
    """Entry point for ``agentbus bench turn``: measure, then print the figures."""
    figures = measure(
        mode=mode,
        accuracy=accuracy,
        runs=runs,
        concurrency=concurrency,
        processes=processes,
        deployment=deployment,
        model_latency=model_latency,
        latency_runs=latency_runs,
    )
    if as_json:
        print(json.dumps(figures))
    else:
        for k, v in figures.items():
            print(f"{k:>15}: {v}")
