"""Turn benchmark: whole runs through ``agentbus up`` with the scripted model.

A turn: the model calls the calculator, the gateway runs it, the model streams a 40-token
answer, the finalizer persists it. Zero model latency, so the figures are agentbus's own
overhead. ``agentbus up`` runs as a separate process on a temporary data folder.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from redis import Redis as SyncRedis
from redis.asyncio import Redis
from redis.exceptions import RedisError

from api.cli.common import loop_factory
from api.compose.roles import UP_ROLES
from bus import embedded, keys
from bus.commands import AgentTask, Command, RunSettings, RunState, deadline_in, new_run_id
from bus.publish import publish
from bus.settings import BusSettings


def _command(mode: str, accuracy: str = "standard") -> Command:
    return Command(
        run_id=new_run_id(),
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
) -> tuple[float, int]:
    command = _command(mode, accuracy)
    stream, last, count = keys.run_events(command.run_id, 0), "0-0", 0
    started = time.perf_counter()
    await publish(redis, command, settings)
    while True:
        for _, entries in await redis.xread({stream: last}, block=10_000) or ():
            for entry_id, fields in entries:
                last, count = entry_id, count + 1
                if b'"type":"done"' in fields[b"data"]:
                    return (time.perf_counter() - started) * 1000, count


async def drive(
    settings: BusSettings, *, mode: str, runs: int, concurrency: int, accuracy: str = "standard"
) -> dict[str, float | int]:
    """Measure latency at concurrency 1, then throughput at ``concurrency``."""
    redis = Redis.from_url(embedded.socket_url(settings.data_dir))
    for _ in range(5):  # warm-up: imports, first SQL connection, script load
        await _one_run(redis, settings, mode, accuracy)
    latencies = [
        (await _one_run(redis, settings, mode, accuracy))[0] for _ in range(min(runs, 200))
    ]
    pending = list(range(runs))
    events: list[int] = []

    async def client() -> None:
        while pending:
            pending.pop()
            events.append((await _one_run(redis, settings, mode, accuracy))[1])

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    await redis.aclose()
    latencies.sort()
    return {
        "runs_per_s": round(runs / elapsed, 1),
        "p50_ms": round(statistics.median(latencies), 2),
        "p99_ms": round(latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))], 2),
        "events_per_run": round(statistics.mean(events), 1),
        "runs": runs,
        "concurrency": concurrency,
    }


def _groups_ready(data: Path) -> bool:
    """Every role of ``up`` has its consumer group (a group made after a run was published
    would start past it, at ``$``, and the bench would wait for that run forever)."""
    if not embedded.is_running(data) or not (data / "agentbus.db").exists():
        return False
    client = SyncRedis.from_url(embedded.socket_url(data))
    try:
        for role in UP_ROLES:
            stream = keys.role_stream(role, 0)
            if not client.exists(stream) or not client.xinfo_groups(stream):
                return False
        return True
    except RedisError:
        return False
    finally:
        client.close()


def wait_started(up: subprocess.Popen[bytes], data: Path) -> None:
    """Wait until ``agentbus up`` consumes every role stream (or fail after 3 minutes: on
    a loaded host its start has taken over one)."""
    deadline = time.monotonic() + 180
    while not _groups_ready(data):
        if up.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("agentbus up did not start")
        time.sleep(0.1)


def main(
    *, mode: str, accuracy: str, runs: int, concurrency: int, processes: int = 1, as_json: bool
) -> None:
    """Entry point for ``agentbus bench turn``: start ``agentbus up``, drive it, stop it."""
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTBUS_")}
        env.update(
            AGENTBUS_DATA_DIR=str(data),
            AGENTBUS_LLM="scripted",
            AGENTBUS_LOG_LEVEL="warning",
            AGENTBUS_API_PORT="0",
        )
        agentbus = str(Path(sys.executable).with_name("agentbus"))
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
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_started(up, data)
            with asyncio.Runner(loop_factory=loop_factory()) as runner:
                figures = runner.run(
                    drive(
                        BusSettings(data_dir=data),
                        mode=mode,
                        accuracy=accuracy,
                        runs=runs,
                        concurrency=concurrency,
                    )
                )
        finally:
            up.send_signal(signal.SIGTERM)
            up.wait(30)
    figures = {"mode": mode, "accuracy": accuracy, "processes": processes, **figures}  # type: ignore[dict-item]
    if as_json:
        print(json.dumps(figures))
    else:
        for k, v in figures.items():
            print(f"{k:>15}: {v}")
