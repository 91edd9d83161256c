"""The worker's probe and metrics server, and the one-exporter-per-role stats lease."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import httpx
import pytest
from prometheus_client import REGISTRY
from redis.asyncio import Redis

from bus.runtime import health, metrics
from bus.runtime.groups import ensure_group
from bus.runtime.runner import Runner


async def _get(port: int, path: str) -> httpx.Response:
    async with httpx.AsyncClient() as client:
        return await client.get(f"http://127.0.0.1:{port}{path}")


async def test_probes_follow_start_up_and_the_event_loop() -> None:
    status = health.Health(stale_after_s=0.3)
    server = health.serve(0, status, host="127.0.0.1")
    port = server.server_port
    try:
        beat = asyncio.create_task(status.beat(period_s=0.05))
        await asyncio.sleep(0.1)
        assert (await _get(port, "/healthz")).status_code == 200
        assert (await _get(port, "/readyz")).status_code == 503  # not started yet
        status.ready()
        assert (await _get(port, "/readyz")).status_code == 200
        metrics_page = await _get(port, "/metrics")
        assert "agentbus_messages_total" in metrics_page.text
        beat.cancel()  # as a stuck event loop would stop beating
        await asyncio.sleep(0.4)
        assert (await _get(port, "/healthz")).status_code == 503
        assert (await _get(port, "/readyz")).status_code == 503
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class _Consumer:
    group: str
    streams: list[str]
    busy: bool = False
    runs: list[int] = field(default_factory=lambda: [])

    async def ensure_groups(self) -> None:
        """Not used here."""

    async def run(self) -> None:
        """Not used here."""

    def stop(self) -> None:
        """Not used here."""


def _lag(stream: str, group: str) -> float | None:
    return REGISTRY.get_sample_value("agentbus_group_lag", {"stream": stream, "group": group})


async def test_one_replica_of_a_role_exports_its_streams(redis: Redis) -> None:
    stream = "ab:{0}:role:statsprobe"
    await ensure_group(redis, stream, "statsprobe")
    await redis.xadd(stream, {"x": "1"})
    first, second = Runner([], redis), Runner([], redis)
    consumer = _Consumer("statsprobe", [stream])
    assert await first._hold_lease("statsprobe", "a", 1_000)
    assert await first._hold_lease("statsprobe", "a", 1_000)  # renewed by its holder
    assert not await second._hold_lease("statsprobe", "b", 1_000)
    await first._export(consumer)
    assert _lag(stream, "statsprobe") == 1
    second._unexport(consumer)  # a replica without the lease shows nothing
    assert _lag(stream, "statsprobe") is None
    await redis.delete("ab:stats:exporter:statsprobe")  # the holder died; its lease ran out
    assert await second._hold_lease("statsprobe", "b", 1_000)
    metrics.GROUP_PENDING.remove(stream, "statsprobe")


@pytest.fixture(autouse=True)
def _clean_gauges() -> None:
    for gauge in (metrics.GROUP_LAG, metrics.GROUP_PENDING):
        gauge.clear()
