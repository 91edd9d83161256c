"""``agentbus bench peer``: the benchmark turn in agentbus and in LangGraph, side by side.

Each round runs, one after the other in the same window: agentbus (`agentbus_bench.turn`,
``--mode multi --accuracy accurate``: ``agentbus up`` on its embedded defaults), then the
same turn in LangGraph (`agentbus_bench.peer_graph`) with its in-memory saver, then with its
Postgres saver. Every system gets the same load: 5 warm-up runs, ``min(runs, 200)`` runs one
at a time (p50, p99), then ``runs`` runs with ``concurrency`` in flight (runs/s), each on a
new thread. CPU per run is every process of the system over every run driven: agentbus's
processes (its embedded Redis included) and its driving client; for LangGraph this process
and, when Postgres runs on this machine, its server processes serving the saver.
Needs the ``peer`` extra (``uv sync --extra peer``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import statistics
import time
import uuid
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from typing import Any, cast

import psycopg
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.graph.state import CompiledStateGraph
from psycopg import AsyncConnection, sql
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool

from agentbus_bench import turn
from agentbus_bench.peer_graph import Answer, ask, build_graph
from api.cli.common import loop_factory

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/bench_peer"
WARM_UP = 5
APPLICATION = "agentbus-bench-peer"
# Postgres allows 100 connections by default; the pool never needs more than the runs in flight.
MAX_POOL = 64

AGENTBUS, MEMORY, POSTGRES = "agentbus", "langgraph-memory", "langgraph-postgres"

Row = dict[str, Any]


class Skipped(Exception):
    """A system that could not run here; the message says why."""


def _pct(ordered: list[float], q: float) -> float:
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * q))], 2) if ordered else 0.0


async def drive(
    graph: CompiledStateGraph[Any, Any, Any, Any],
    *,
    runs: int,
    concurrency: int,
    server_cpu: Callable[[], float] = lambda: 0.0,
) -> Row:
    """The load `agentbus_bench.turn.drive` puts on agentbus, on a LangGraph graph."""
    answers: list[Answer] = []
    cpu_before, server_before = time.process_time(), server_cpu()

    async def timed() -> float:
        started = time.perf_counter()
        answers.append(await ask(graph, uuid.uuid4().hex))
        return (time.perf_counter() - started) * 1000

    for _ in range(WARM_UP):
        await timed()
    latencies = sorted([await timed() for _ in range(min(runs, 200))])
    pending = list(range(runs))

    async def client() -> None:
        while pending:
            pending.pop()
            await timed()

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    process_ms = (time.process_time() - cpu_before) * 1000 / len(answers)
    server_ms = (server_cpu() - server_before) * 1000 / len(answers)
    return {
        "runs_per_s": round(runs / elapsed, 1),
        "p50_ms": round(statistics.median(latencies), 2),
        "p99_ms": _pct(latencies, 0.99),
        "cpu_ms_per_run": round(process_ms + server_ms, 2),
        "cpu_ms_per_run_server": round(server_ms, 2),
        "runs": runs,
        "runs_wrong": sum(not a.ok for a in answers),
    }


@contextlib.asynccontextmanager
async def postgres_saver(
    url: str, pool_size: int
) -> AsyncGenerator[tuple[AsyncPostgresSaver, list[int]]]:
    """LangGraph's Postgres saver on a pool (its documented set-up), the database created
    and the tables set up if missing, emptied of earlier rounds' checkpoints; with the pids
    of the server processes serving the pool.

    Raises:
        Skipped: Postgres is not reachable at ``url`` (or may not create the database).
    """
    base, _, name = url.rpartition("/")
    try:
        async with await psycopg.AsyncConnection.connect(
            f"{base}/postgres", autocommit=True, connect_timeout=5
        ) as admin:
            found = await admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
            if await found.fetchone() is None:
                await admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    except psycopg.Error as e:
        raise Skipped(
            f"Postgres not reachable at {url}: {str(e).strip() or type(e).__name__}"
        ) from e
    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    async with AsyncConnectionPool(
        url,
        connection_class=AsyncConnection[DictRow],
        min_size=pool_size,
        max_size=pool_size,
        kwargs={**kwargs, "application_name": APPLICATION},
        open=False,
    ) as pool:
        await pool.open(wait=True, timeout=30)
        saver = AsyncPostgresSaver(pool)
        await saver.setup()
        async with pool.connection() as conn:
            await conn.execute("TRUNCATE checkpoints, checkpoint_blobs, checkpoint_writes")
            found = await conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE application_name = %s", (APPLICATION,)
            )
            pids = [int(row["pid"]) for row in await found.fetchall()]
        yield saver, pids


def _cpu_s(pids: list[int]) -> float:
    """User + system CPU seconds of those processes that are on this machine (Linux)."""
    total = 0.0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


async def _langgraph(saver: str, runs: int, concurrency: int, postgres_url: str) -> Row:
    if saver == MEMORY:
        return await drive(build_graph(InMemorySaver()), runs=runs, concurrency=concurrency)
    async with postgres_saver(postgres_url, min(concurrency, MAX_POOL)) as (checkpointer, pids):
        return await drive(
            build_graph(checkpointer),
            runs=runs,
            concurrency=concurrency,
            server_cpu=lambda: _cpu_s(pids),
        )


def measure_langgraph(saver: str, *, runs: int, concurrency: int, postgres_url: str) -> Row:
    """One LangGraph phase on its own event loop (uvloop where installed, as agentbus's)."""
    try:
        with asyncio.Runner(loop_factory=loop_factory()) as runner:
            return runner.run(_langgraph(saver, runs, concurrency, postgres_url))
    except Skipped as e:
        return {"skipped": str(e)}


def measure_agentbus(*, runs: int, concurrency: int) -> Row:
    """`agentbus bench turn --mode multi --accuracy accurate`, CPU summed over processes."""
    figures = turn.measure(mode="multi", accuracy="accurate", runs=runs, concurrency=concurrency)
    cpu = cast("dict[str, float]", figures["cpu_ms_per_run"])
    return {
        "runs_per_s": figures["runs_per_s"],
        "p50_ms": figures["p50_ms"],
        "p99_ms": figures["p99_ms"],
        "cpu_ms_per_run": round(sum(cpu.values()), 2),
        "cpu_ms_per_run_by_process": cpu,
        "runs": runs,
        "runs_wrong": figures["runs_not_done"],
    }


def _median(rows: list[Row], key: str) -> float | None:
    values = [float(r[key]) for r in rows if key in r]
    return round(statistics.median(values), 2) if values else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a and b else None


def summarize(rounds: list[dict[str, Row]]) -> dict[str, Any]:
    """The median of each figure over the rounds, and agentbus's ratio to each LangGraph."""
    keys = ("runs_per_s", "p50_ms", "p99_ms", "cpu_ms_per_run")
    median = {
        system: {k: _median([r[system] for r in rounds], k) for k in keys}
        for system in (AGENTBUS, MEMORY, POSTGRES)
    }
    ratio = {
        f"agentbus/{system}": {
            k: _ratio(median[AGENTBUS][k], median[system][k]) for k in ("runs_per_s", "p50_ms")
        }
        for system in (MEMORY, POSTGRES)
    }
    return {"median": median, "ratio": ratio}


def _line(system: str, row: Row) -> str:
    if "skipped" in row:
        return f"  {system:<19} skipped: {row['skipped']}"
    wrong = f"  wrong {row['runs_wrong']}" if row.get("runs_wrong") else ""
    return (
        f"  {system:<19} {row['runs_per_s']:>8} runs/s  p50 {row['p50_ms']:>7} ms  "
        f"p99 {row['p99_ms']:>7} ms  cpu {row['cpu_ms_per_run']:>6} ms/run{wrong}"
    )


def main(*, runs: int, concurrency: int, rounds: int, postgres_url: str, as_json: bool) -> None:
    """Entry point for ``agentbus bench peer``: the rounds, each figure, the ratios."""

    def phase(system: str) -> Row:
        if system == AGENTBUS:
            return measure_agentbus(runs=runs, concurrency=concurrency)
        return measure_langgraph(
            system, runs=runs, concurrency=concurrency, postgres_url=postgres_url
        )

    results: list[dict[str, Row]] = []
    for n in range(1, rounds + 1):
        if not as_json:
            print(f"round {n}/{rounds} (runs {runs}, concurrency {concurrency})", flush=True)
        row: dict[str, Row] = {}
        for system in (AGENTBUS, MEMORY, POSTGRES):
            row[system] = phase(system)
            if not as_json:
                print(_line(system, row[system]), flush=True)
        results.append(row)
    summary = summarize(results)
    if as_json:
        print(json.dumps({"runs": runs, "concurrency": concurrency, "rounds": results, **summary}))
        return
    print(f"median of {rounds} round(s)")
    for system, figures in summary["median"].items():
        if figures["runs_per_s"] is not None:
            print(_line(system, figures))
    for pair, ratio in summary["ratio"].items():
        if ratio["runs_per_s"] is not None:
            print(f"  {pair}: runs/s x{ratio['runs_per_s']}, p50 x{ratio['p50_ms']}")
