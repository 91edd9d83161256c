"""The edge's read-through cache: one read per key at a time, refreshed before it expires."""

from __future__ import annotations

import asyncio

import pytest

from api.app.read_through import ReadThrough


class Source:
    def __init__(self) -> None:
        self.reads = 0
        self.value = "v1"
        self.gate = asyncio.Event()
        self.gate.set()
        self.fail = False

    async def load(self) -> tuple[str, bool]:
        self.reads += 1
        await self.gate.wait()
        if self.fail:
            raise RuntimeError("store down")
        return self.value, True


async def test_concurrent_misses_share_one_read() -> None:
    source, cache = Source(), ReadThrough[str](5.0)
    source.gate.clear()
    waiting = [asyncio.create_task(cache.get("k", source.load)) for _ in range(20)]
    await asyncio.sleep(0)
    source.gate.set()
    assert await asyncio.gather(*waiting) == ["v1"] * 20
    assert source.reads == 1


async def test_a_value_is_trusted_for_its_ttl_from_the_start_of_its_read() -> None:
    now = [0.0]
    source, cache = Source(), ReadThrough[str](4.0, clock=lambda: now[0])
    await cache.get("k", source.load)
    source.value = "v2"
    now[0] = 2.0
    assert await cache.get("k", source.load) == "v1"  # fresh: no read
    now[0] = 4.0
    assert await cache.get("k", source.load) == "v2"  # expired: read again
    assert source.reads == 2


async def test_a_hit_near_its_expiry_is_answered_and_refreshed_behind() -> None:
    now = [0.0]
    source, cache = Source(), ReadThrough[str](4.0, clock=lambda: now[0])
    await cache.get("k", source.load)
    source.value = "v2"
    now[0] = 3.5  # last quarter of its life
    assert await cache.get("k", source.load) == "v1"  # the caller did not wait
    await asyncio.sleep(0.01)
    assert source.reads == 2
    now[0] = 6.0  # past the first value's expiry, inside the refreshed one's
    assert await cache.get("k", source.load) == "v2"
    assert source.reads == 2


async def test_a_failed_read_fails_its_callers_and_is_not_cached() -> None:
    source, cache = Source(), ReadThrough[str](5.0)
    source.fail = True
    with pytest.raises(RuntimeError):
        await cache.get("k", source.load)
    source.fail = False
    assert await cache.get("k", source.load) == "v1"


async def test_values_not_to_keep_and_forgotten_keys_are_read_again() -> None:
    cache = ReadThrough[str | None](5.0)
    reads = 0

    async def missing() -> tuple[str | None, bool]:
        nonlocal reads
        reads += 1
        return None, False

    await cache.get("gone", missing)
    await cache.get("gone", missing)
    assert reads == 2
    source = Source()
    await cache.get("k", source.load)
    cache.forget("k")
    await cache.get("k", source.load)
    assert source.reads == 2
