"""`agentbus bench turn` on a given Redis and Postgres: the flags reach `agentbus up`.

Tiny run counts; the figures are not checked (speed is for the benchmark itself), only
that the runs went through the Redis and the database named, ended ``done``, and that the
report has each process's peak RSS.
"""

from __future__ import annotations

import json

import asyncpg
import pytest
from redis.asyncio import Redis

from tests.conftest import TEST_REDIS_URL
from tests.processes import cli


# `up` migrates a fresh Postgres and starts three processes: minutes on a loaded 2-core host.
@pytest.mark.timeout(420)
async def test_turn_runs_on_the_given_redis_and_database(
    real_redis: Redis, postgres_app_url: str, postgres_database: str
) -> None:
    out = await cli(
        [
            "bench",
            "turn",
            "--redis-url",
            TEST_REDIS_URL,
            "--database-url",
            postgres_app_url,
            "--runs",
            "3",
            "--latency-runs",
            "0",
            "--concurrency",
            "3",
            "--processes",
            "2",
            "--model-latency",
            "0.05",
            "--json",
        ],
        {},
    )
    figures = json.loads(out.strip().splitlines()[-1])
    assert figures["deployment"] == "redis+postgres"
    assert figures["runs_not_done"] == 0
    # At least a run's own commits, events and reads (the shared Redis adds others').
    assert float(figures["redis_commands_per_run"]) >= 20  # pyright: ignore[reportArgumentType]
    assert figures["model_latency_s"] == 0.05
    assert {"up", "worker", "api"} <= set(figures["peak_rss_mb"])
    assert await real_redis.keys("*run:*:events")  # the runs' events are in this Redis
    db = await asyncpg.connect(postgres_database)
    try:
        assert await db.fetchval("SELECT count(*) FROM runs") == 3 + 5  # + the warm-up
    finally:
        await db.close()
