"""HNSW for the embedded store, built in a child process while the store keeps serving.

Qdrant Edge scans points it has not indexed (fast in Rust: ~2 ms for a hybrid query over
10,000 chunks here, but linear: ~65 ms over 100,000). Its ``optimize`` builds the HNSW
graphs, but holds the GIL for the whole build (~15 s per 10,000 chunks on two cores), which
would freeze every coroutine of the process. So once enough points are unindexed and
writes have paused, the indexer copies the live generation (flushed, on the store's
thread, so no write interleaves), optimizes the copy in a child process
(``python -m retrieval.edge_index FOLDER``, at a lower CPU priority), then, on the store's
thread, loads the copy, replays the writes made meanwhile and makes it the live one. The
store answers from the old generation until then. A crash mid-build leaves the old
generation live; the next open deletes the copy.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import qdrant_edge as qe
import structlog

log = structlog.get_logger("retrieval.edge_index")
T = TypeVar("T")


class Generations(Protocol):
    """What the indexer asks of the store (`retrieval.edge_store.EdgeStore`): its folder of
    generations, the live one, a swap, and the store's one thread."""

    @property
    def folder(self) -> Path:
        """The collection's folder, holding its generations (``g1``, ``g2``, ...)."""
        ...

    def current_dir(self) -> Path | None:
        """The live generation's folder (None: no collection yet)."""
        ...

    def live(self) -> qe.EdgeShard:
        """The live shard."""
        ...

    def swap(self, shard: qe.EdgeShard, generation: Path) -> None:
        """Make ``shard``, loaded from ``generation``, the live one (store thread)."""
        ...

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn`` on the store's thread."""
        ...


def unindexed(shard: qe.EdgeShard) -> int:
    """Points whose dense vector has no HNSW graph yet.

    ``indexed_vectors_count`` counts the sparse vectors (always indexed) and the dense
    vectors of optimized segments.
    """
    info = shard.info()
    return max(0, 2 * info.points_count - info.indexed_vectors_count)


class EdgeIndexer:
    """Decides when the store's new points get an HNSW index, and builds it aside.

    Attributes:
        threshold: unindexed points that make a build worthwhile (below it, a scan is
            a few milliseconds).
        quiet_s: seconds without writes before a build starts (an ingest finishes first).
    """

    def __init__(
        self, store: Generations, *, threshold: int = 20_000, quiet_s: float = 2.0
    ) -> None:
        self.store = store
        self.threshold = threshold
        self.quiet_s = quiet_s
        self.builds = 0
        self._pending = 0
        self._last_write = 0.0
        self._log: list[qe.UpdateOperation] | None = None
        self._task: asyncio.Task[None] | None = None
        self._building = False
        self._settled = asyncio.Event()

    def start(self, shard: qe.EdgeShard | None) -> None:
        """Count what is unindexed now in the live ``shard`` (None: no collection yet) and
        start watching."""
        self._pending = unindexed(shard) if shard is not None else 0
        self._note()
        self._task = asyncio.create_task(self._loop(), name="edge-index")

    async def stop(self) -> None:
        """Stop watching; a build in progress is abandoned (the old generation stays)."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    def record(self, ops: Sequence[qe.UpdateOperation]) -> None:
        """Keep writes made during a build, to replay on the new generation (store thread)."""
        if self._log is not None:
            self._log.extend(ops)

    def wrote(self, points: int) -> None:
        """Note ``points`` new points."""
        self._pending += points
        self._last_write = time.monotonic()
        self._note()

    def _note(self) -> None:
        if self.idle:
            self._settled.set()
        else:
            self._settled.clear()

    @property
    def idle(self) -> bool:
        """Nothing worth indexing is waiting and no build runs."""
        return not self._building and self._pending < self.threshold

    async def wait_idle(self, timeout_s: float | None = None) -> None:
        """Wait until every worthwhile build is done (benchmarks, tests)."""
        async with asyncio.timeout(timeout_s):
            while not self.idle:
                await self._settled.wait()

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(max(0.05, min(0.5, self.quiet_s)))
            quiet = time.monotonic() - self._last_write >= self.quiet_s
            if self._pending >= self.threshold and quiet:
                self._building = True
                self._note()
                try:
                    await self.build()
                except Exception as e:  # the store keeps serving from the old generation
                    log.warning("index build failed", error=repr(e))
                    await asyncio.sleep(30)
                finally:
                    self._building = False
                    self._note()

    async def build(self) -> None:
        """Index the live generation's points in a child process and swap it in."""
        store = self.store
        live = store.current_dir()
        assert live is not None, "a build needs a collection"
        target = store.folder / f"g{int(live.name[1:]) + 1}"
        covered = self._pending

        def snapshot() -> None:
            store.live().flush()
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(live, target)
            self._log = []

        started = time.monotonic()
        try:
            await store.run(snapshot)
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "retrieval.edge_index",
                str(target),
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
            )
            try:
                _, err = await proc.communicate()
            except asyncio.CancelledError:
                proc.kill()
                await proc.wait()
                raise
            if proc.returncode != 0:
                raise RuntimeError(f"the index build exited {proc.returncode}: {err[-500:]!r}")

            def switch() -> None:
                shard = qe.EdgeShard.load(str(target), None)
                for op in self._log or ():
                    shard.update(op)
                self._log = None
                store.swap(shard, target)

            await store.run(switch)
        except BaseException:
            # On the store's one thread, so after a snapshot still running when cancelled.
            def abandon() -> None:
                self._log = None
                shutil.rmtree(target, ignore_errors=True)

            await store.run(abandon)
            raise
        self._pending = max(0, self._pending - covered)
        self.builds += 1
        log.info("index built", points=covered, seconds=round(time.monotonic() - started, 1))


def main(folder: str) -> None:
    """Optimize (build HNSW for) the Edge shard in ``folder``; run as a child process."""
    os.nice(10)  # the serving process comes first on a small machine
    shard = qe.EdgeShard.load(folder, None)
    shard.optimize()
    shard.flush()
    shard.close()


if __name__ == "__main__":
    main(sys.argv[1])
