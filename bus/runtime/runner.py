"""Runs a process's workers: signals, graceful drain, burst mode, metrics endpoint."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

import structlog

from bus import keys
from bus.runtime import metrics
from bus.runtime.groups import group_stats
from bus.runtime.leases import TAKE_OR_RENEW
from bus.typed_redis import lua

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = structlog.get_logger("bus.runner")


class Consumer(Protocol):
    """What the runner drives: a `StreamConsumer` (a step `Worker`, the ledger's `Recorder`)."""

    group: str
    streams: list[str]

    @property
    def busy(self) -> bool: ...

    async def ensure_groups(self) -> None: ...

    async def run(self) -> None: ...

    def stop(self) -> None: ...


class Runner:
    """Runs workers until SIGTERM/SIGINT (drain, then exit) or, in burst mode, until idle.

    ``on_signal`` is called first when a signal arrives (before the workers drain).
    """

    def __init__(
        self,
        workers: Sequence[Consumer],
        redis: Redis,
        *,
        burst: bool = False,
        stats_interval_s: float = 5.0,
        on_signal: Callable[[], None] | None = None,
    ) -> None:
        self.workers = list(workers)
        self.redis = redis
        self.burst = burst
        self.stats_interval_s = stats_interval_s
        self.on_signal = on_signal

    def stop(self) -> None:
        """Ask every worker to stop reading and drain."""
        for worker in self.workers:
            worker.stop()

    async def run(self) -> None:
        """Run to completion; returns after every worker drained."""
        loop = asyncio.get_running_loop()
        installed: list[int] = []
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, self._on_signal, sig)
                installed.append(sig)
        helpers = [asyncio.create_task(self._stats_loop())]
        if self.burst:
            helpers.append(asyncio.create_task(self._burst_watch()))
        try:
            await asyncio.gather(*(w.run() for w in self.workers))
        finally:
            for task in helpers:
                task.cancel()
            await asyncio.gather(*helpers, return_exceptions=True)
            for sig in installed:
                loop.remove_signal_handler(sig)

    def _on_signal(self, sig: int) -> None:
        log.info("draining", signal=signal.Signals(sig).name)
        if self.on_signal is not None:  # e.g. stop taking new work at the edge first
            self.on_signal()
        self.stop()

    async def idle(self) -> bool:
        """True when no worker is busy and every stream is fully delivered and acked."""
        if any(w.busy for w in self.workers):
            return False
        for worker in self.workers:
            for stream in worker.streams:
                for g in await group_stats(self.redis, stream):
                    if g.group == worker.group and (g.pending or g.lag):
                        return False
        return not any(w.busy for w in self.workers)

    async def _burst_watch(self) -> None:
        # Two idle checks in a row: a commit between a worker's empty read and the
        # first check shows up as lag in the second.
        streak = 0
        while True:
            await asyncio.sleep(0.02)
            streak = streak + 1 if await self.idle() else 0
            if streak >= 2:
                log.info("burst: all streams drained")
                self.stop()
                return

    async def _stats_loop(self) -> None:
        # Lag and pending are facts of the deployment, not of a replica: one replica of
        # each role (the holder of a short lease) exports them, so a dashboard or a
        # scaler summing them over replicas counts each stream once.
        token = uuid.uuid4().hex
        ttl_ms = int(self.stats_interval_s * 3000)
        while True:
            for worker in self.workers:
                try:
                    if await self._hold_lease(worker.group, token, ttl_ms):
                        await self._export(worker)
                    else:
                        self._unexport(worker)
                except Exception as e:  # metrics must never stop the worker
                    log.warning("stats failed", group=worker.group, error=str(e))
            await asyncio.sleep(self.stats_interval_s)

    async def _hold_lease(self, group: str, token: str, ttl_ms: int) -> bool:
        lease = lua(self.redis, TAKE_OR_RENEW)
        return bool(await lease(keys=[keys.stats_lease(group)], args=[token, ttl_ms]))

    async def _export(self, worker: Consumer) -> None:
        for stream in worker.streams:
            for g in await group_stats(self.redis, stream):
                metrics.GROUP_LAG.labels(stream, g.group).set(g.lag)
                metrics.GROUP_PENDING.labels(stream, g.group).set(g.pending)

    @staticmethod
    def _unexport(worker: Consumer) -> None:
        for stream in worker.streams:
            for gauge in (metrics.GROUP_LAG, metrics.GROUP_PENDING):
                with contextlib.suppress(KeyError):
                    gauge.remove(stream, worker.group)
