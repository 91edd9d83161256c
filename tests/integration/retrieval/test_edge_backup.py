"""A copy of the embedded vector store for a backup: taken by the process that holds it
(asked over the bus, fakeredis and a real Redis) or directly when none does; never half a
write."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from pathlib import Path

import pytest
from redis.asyncio import Redis

from agents.roles.gather import make_retrieval_router
from api.compose.settings import AppSettings
from bus import keys
from bus.runtime.worker import Worker
from retrieval.edge_backup import SNAPSHOTS, RemoteSnapshot, copy_unowned, make_snapshot_handler
from retrieval.edge_store import EdgeStore
from retrieval.errors import SearchUnanswered
from retrieval.models import Access
from tests.conftest import fake_client, real_client
from tests.contracts.vector_store import EMBEDDER, chunk, find, put
from tests.support import running

BATCH = 20


@pytest.fixture(params=["fake", pytest.param("real", marks=pytest.mark.connected)])
async def redis(request: pytest.FixtureRequest) -> AsyncIterator[Redis]:
    client = fake_client() if request.param == "fake" else real_client()
    async with client as r:
        yield r


@contextlib.asynccontextmanager
async def _store(root: Path) -> AsyncGenerator[EdgeStore]:
    store = await EdgeStore.open(root, "c", index_threshold=10**9)
    try:
        await store.ensure_collection(EMBEDDER.dim, EMBEDDER.name)
        yield store
    finally:
        await store.aclose()


async def _write_batches(store: EdgeStore, start: int, stop: asyncio.Event) -> None:
    n = start
    while not stop.is_set():
        await put(store, *(chunk(n + i, f"tide table {n + i}") for i in range(BATCH)))
        n += BATCH
        await asyncio.sleep(0)


async def test_the_owner_copies_the_store_between_two_writes_when_asked_over_the_bus(
    redis: Redis, make_settings: Callable[..., AppSettings], tmp_path: Path
) -> None:
    settings = make_settings()
    root, target = tmp_path / "vectors", tmp_path / "backup" / "vectors" / "c"
    target.parent.mkdir(parents=True)
    async with _store(root) as store:
        await put(store, *(chunk(n, f"harbour log {n}") for n in range(BATCH)))
        router = make_retrieval_router({}, 5.0, snapshot=make_snapshot_handler(store))
        worker = Worker(keys.Role.RETRIEVAL, router, redis, settings.bus)
        stop = asyncio.Event()
        async with running([worker], redis):
            writer = asyncio.create_task(_write_batches(store, 1000, stop))
            await asyncio.sleep(0.2)  # writes are under way
            remote = RemoteSnapshot(redis, settings.bus, "local", "cli")
            points = await remote.copy(root, target, wait_s=20)
            stop.set()
            await writer
        await put(store, chunk(10**6, "written after the copy"))
        written = await store.count()

    assert not any((root / SNAPSHOTS).iterdir())  # the copy moved out of the store's folder
    copied = await EdgeStore.open(target.parent, "c")
    try:
        assert await copied.count() == points
        assert BATCH < points < written and points % BATCH == 0  # whole batches only
        assert await find(copied, "harbour log 7", Access.of("t1"), "hybrid")
    finally:
        await copied.aclose()


async def test_a_store_nobody_holds_is_copied_directly_and_a_held_one_is_not(
    tmp_path: Path,
) -> None:
    root = tmp_path / "vectors"
    async with _store(root) as store:
        await put(store, chunk(1, "lighthouse keeper notes"))
        assert await copy_unowned(root, "c", tmp_path / "held") is None  # held: ask its owner
    assert not (tmp_path / "held").exists()

    assert await copy_unowned(root, "c", tmp_path / "copy" / "c") == 1
    copied = await EdgeStore.open(tmp_path / "copy", "c")
    try:
        assert await find(copied, "lighthouse keeper", Access.of("t1"), "hybrid") == [
            chunk(1, "").id
        ]
    finally:
        await copied.aclose()


async def test_no_owner_answering_is_a_clear_error(
    redis: Redis, make_settings: Callable[..., AppSettings], tmp_path: Path
) -> None:
    remote = RemoteSnapshot(redis, make_settings().bus, "local", "cli")
    with pytest.raises(SearchUnanswered, match=r"did not answer within 0\.2s"):
        await remote.copy(tmp_path / "vectors", tmp_path / "copy", wait_s=0.2)
