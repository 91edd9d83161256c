"""The embedded store's HNSW build: in a child process, writes made meanwhile replayed."""

from __future__ import annotations

import asyncio
from pathlib import Path

from retrieval.edge_index import unindexed
from retrieval.edge_store import EdgeStore
from retrieval.models import Access
from tests.contracts.vector_store import EMBEDDER, chunk, find, put


async def test_a_build_indexes_everything_and_keeps_writes_made_during_it(
    tmp_path: Path,
) -> None:
    store = await EdgeStore.open(tmp_path / "v", "c", index_threshold=10**9, segment_index_kb=1)
    try:
        await store.ensure_collection(EMBEDDER.dim, EMBEDDER.name)
        before = [chunk(n, f"harbour log entry {n}") for n in range(1, 301)]
        await put(store, *before)
        shard = store.live()
        assert unindexed(shard) == 300

        async def write_meanwhile() -> None:
            await asyncio.sleep(0.3)  # the child process is starting or building by now
            await put(store, chunk(999, "lighthouse written during the build"))
            await store.relabel([before[0].id], "v2", ["hr"])
            assert await store.delete_document("t1", before[1].doc_id) == 1
            # Searches keep working from the old generation.
            assert await find(store, "harbour log entry 7", Access.of("t1"), "hybrid")

        await asyncio.gather(store.indexer.build(), write_meanwhile())
        assert store.current_dir() == store.folder / "g2"
        assert not (store.folder / "g1").exists()
        live = store.live()
        assert live is not shard and unindexed(live) <= 1  # the replayed point may be plain
        assert live.info().points_count == 300
        anyone = Access.of("t1")
        assert (await find(store, "lighthouse written during the build", anyone, "hybrid"))[0] == (
            chunk(999, "").id
        )
        assert await store.versions([before[0].id, before[1].id]) == {before[0].id: ("v2", ("hr",))}
    finally:
        await store.aclose()

    reopened = await EdgeStore.open(tmp_path / "v", "c")
    try:
        assert reopened.current_dir() == reopened.folder / "g2"
        assert await reopened.count("t1") == 300
    finally:
        await reopened.aclose()


async def test_an_interrupted_build_leaves_the_old_generation_live(tmp_path: Path) -> None:
    store = await EdgeStore.open(tmp_path / "v", "c", index_threshold=10**9)
    try:
        await store.ensure_collection(EMBEDDER.dim, EMBEDDER.name)
        await put(store, chunk(1, "harbour"))
        build = asyncio.create_task(store.indexer.build())
        await asyncio.sleep(0.2)
        build.cancel()
        await asyncio.gather(build, return_exceptions=True)
        assert store.current_dir() == store.folder / "g1"
        assert not (store.folder / "g2").exists()
        assert await find(store, "harbour", Access.of("t1"), "hybrid") == [chunk(1, "").id]
    finally:
        await store.aclose()


async def test_the_indexer_builds_once_enough_points_wait_and_writes_pause(
    tmp_path: Path,
) -> None:
    store = await EdgeStore.open(tmp_path / "v", "c", index_threshold=50, segment_index_kb=1)
    store.indexer.quiet_s = 0.2
    try:
        await store.ensure_collection(EMBEDDER.dim, EMBEDDER.name)
        await put(store, *(chunk(n, f"entry {n}") for n in range(1, 41)))
        await asyncio.sleep(1.0)
        assert store.indexer.builds == 0  # under the threshold: scanning is cheap
        await put(store, *(chunk(n, f"entry {n}") for n in range(41, 81)))
        await store.indexer.wait_idle(timeout_s=60)
        assert store.indexer.builds == 1 and unindexed(store.live()) == 0
    finally:
        await store.aclose()
