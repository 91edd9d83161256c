"""A worker's reclaim pass never counts a delivery of a step the worker itself is running.

The dead-letter limit (``max_deliveries``) counts the attempts at a step. A worker whose
loop stalls past the claim idle time (a loaded host, a paused process) wakes its reclaim
pass and its heartbeat together; a pass that ran first would claim the worker's own
steps in flight, adding a delivery each time though no attempt started, and a step that
then failed once would be dead-lettered with attempts left. Here the heartbeat never comes
round in the test's time, so only the pass's own refresh keeps the step's claim fresh.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from redis.asyncio import Redis

from api.compose.settings import AppSettings
from bus import keys
from bus.commands import Command
from bus.events import Done
from bus.publish import publish
from bus.runtime import consumer
from bus.runtime.context import StepContext, StepResult
from bus.runtime.deadletter import dead_letter_stream
from bus.runtime.groups import Claimed
from bus.runtime.worker import Worker
from tests.support import events_of, noop_command, running, wait_for

NOOP = keys.Role.NOOP


async def test_a_step_outliving_its_claims_idle_time_keeps_every_attempt(
    redis: Redis, make_settings: Callable[..., AppSettings], monkeypatch: pytest.MonkeyPatch
) -> None:
    passes = 0
    claim_idle = consumer.claim_idle

    async def counted(*args: Any, **kwargs: Any) -> Claimed:
        nonlocal passes
        passes += 1
        return await claim_idle(*args, **kwargs)

    monkeypatch.setattr(consumer, "claim_idle", counted)
    attempts: list[int] = []

    async def handle(ctx: StepContext, command: Command) -> StepResult:
        attempts.append(ctx.delivery)
        if len(attempts) == 1:  # the first attempt outlives its claim's idle time
            seen = passes
            await wait_for(lambda: asyncio.sleep(0, passes >= seen + 4))
        if len(attempts) < 3:
            raise RuntimeError("a failure a retry gets past")
        done = Done(run_id=command.run_id, step_id=command.step_id, status="done")
        return StepResult(events=[done], finished="done")

    # A pass every 0.05 s takes what was idle 0.1 s; the heartbeat is a minute away.
    bus = make_settings(claim_idle_ms=100, heartbeat_ms=60_000, max_deliveries=3).bus
    worker = Worker(NOOP, handle, redis, bus, concurrency=2)  # room left: the passes run
    await worker.ensure_groups()
    cmd = noop_command()
    await publish(redis, cmd, bus)

    async with running([worker], redis):

        async def ended() -> bool:
            return any(e.type == "done" for e in await events_of(redis, cmd.run_id))

        await wait_for(ended)

    assert attempts == [1, 2, 3]
    [done] = [e for e in await events_of(redis, cmd.run_id) if e.type == "done"]
    assert getattr(done, "status", None) == "done"
    assert await redis.xlen(dead_letter_stream(0)) == 0
