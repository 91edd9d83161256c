"""The retrieval role of a process: it reads its streams only while it owns the store.

The embedded vector store (Qdrant Edge) is a folder one process may open. Every retrieval
step may touch it (searches sent over the bus, the ``documents`` gather source, ingest
batches), so a process runs the retrieval role only while it holds the store: `StoreOwner`
tries to open it and, while another process owns it, waits (stand-by) without reading the
role's streams, trying again every ``store_standby_poll_s``. The lock is a file lock, so
it is free again the moment its holder exits, even by SIGKILL; the stand-by then opens the
store and takes over, reclaiming the steps the dead holder left pending like any replica.
With a Qdrant server the store opens at once in every process: all of them consume.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import structlog
from redis.asyncio import Redis

from bus.commands import Command
from bus.fence import Fence
from bus.keys import INGEST_LANE, Role
from bus.runtime.context import StepContext, StepResult
from bus.runtime.worker import ErasedHook, Handler, RunEndHook, Worker
from bus.settings import BusSettings
from retrieval.errors import StoreLocked
from retrieval.settings import RetrievalSettings
from retrieval.stack import Retrieval, open_retrieval

log = structlog.get_logger("api.store_owner")


class StoreOwner:
    """The retrieval role's workers (main stream and ingest lane), run while holding the store.

    Args:
        make_handler: builds the role's handler from the opened store's parts.
        redis: the broker.
        bus: the bus settings (shards, block and claim times).
        retrieval: the store's settings (where it is, how often a stand-by retries).
        concurrency: steps in flight per stream group.
        on_run_end: the run-end hook of every worker.
        fence: the erasure fence its commits check (`bus.fence`).
        on_erased: what a fenced step gives back (`bus.runtime.worker.ErasedHook`).
    """

    def __init__(
        self,
        make_handler: Callable[[Retrieval], Handler],
        redis: Redis,
        bus: BusSettings,
        retrieval: RetrievalSettings,
        *,
        concurrency: int = 1,
        on_run_end: RunEndHook | None = None,
        fence: Fence | None = None,
        on_erased: ErasedHook | None = None,
    ) -> None:
        self._make_handler = make_handler
        self._settings = retrieval
        self._handler: Handler | None = None
        # Built now so their groups exist before anyone publishes; they read only once
        # `_handler` is set (the store is open).
        self._workers = [
            Worker(
                Role.RETRIEVAL,
                self._handle,
                redis,
                bus,
                concurrency=concurrency,
                on_run_end=on_run_end,
                lane=lane,
                fence=fence,
                on_erased=on_erased,
            )
            for lane in (None, INGEST_LANE)
        ]
        self.group = self._workers[0].group
        self.streams = [s for w in self._workers for s in w.streams]
        self.owner = asyncio.Event()  # set while this process holds the store
        self._stopping = asyncio.Event()

    async def _handle(self, ctx: StepContext, command: Command) -> StepResult:
        assert self._handler is not None, "workers run only once the store is open"
        return await self._handler(ctx, command)

    @property
    def busy(self) -> bool:
        """True while a step is in flight or a read delivered something."""
        return self.owner.is_set() and any(w.busy for w in self._workers)

    async def ensure_groups(self) -> None:
        """Create the role's group on its streams and lanes (no store needed)."""
        for worker in self._workers:
            await worker.ensure_groups()

    def stop(self) -> None:
        """Stop waiting for the store, or drain the workers."""
        self._stopping.set()
        for worker in self._workers:
            worker.stop()

    async def run(self) -> None:
        """Wait until the store is ours, then consume until stopped; release it after."""
        announced = False
        while not self._stopping.is_set():
            try:
                async with open_retrieval(self._settings) as retrieval:
                    self._handler = self._make_handler(retrieval)
                    self.owner.set()
                    log.info("retrieval: this process owns the vector store")
                    try:
                        await asyncio.gather(*(w.run() for w in self._workers))
                    finally:
                        self.owner.clear()
                    return
            except StoreLocked:
                if not announced:
                    log.info("retrieval: stand-by, another process owns the vector store")
                    announced = True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self._settings.store_standby_poll_s)
