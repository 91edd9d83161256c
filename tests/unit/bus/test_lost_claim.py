"""A step another consumer reclaimed while this one stalled runs on in one place only.

Consumer A stalls inside a step past the claim's idle time (a paused process, a blocked
loop); consumer B reclaims the entry, runs the step and commits it. When A's heartbeat
comes round it must not take the entry back, and A must stop that step: otherwise its
later tokens land after B's ``step_retry`` and every client shows them in the answer.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from redis.asyncio import Redis

from api.compose.settings import AppSettings
from bus import keys
from bus.commands import Command
from bus.events import Answer, Done
from bus.noop import handle_noop
from bus.publish import publish
from bus.runtime.context import StepContext, StepResult
from bus.runtime.groups import group_stats
from bus.runtime.worker import Worker
from bus.transcript import fold
from tests.support import events_of, noop_command, running, wait_for

NOOP = keys.Role.NOOP


async def test_a_stalled_consumer_stops_the_step_another_reclaimed_and_adds_no_text(
    redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    release = asyncio.Event()  # A's stall ends when the test says so
    stopped: list[str] = []

    async def handle(ctx: StepContext, command: Command) -> StepResult:
        def say(text: str) -> Answer:
            return Answer(run_id=command.run_id, step_id=command.step_id, delta=text)

        if ctx.delivery == 1:  # A: streams, then stalls past its claim
            await ctx.emit(say("stale "))
            try:
                await release.wait()
            except asyncio.CancelledError:
                stopped.append("a")
                raise
            await ctx.emit(say("late"))
        else:  # B: the reclaimed delivery
            await ctx.emit(say("fresh"))
        done = Done(run_id=command.run_id, step_id=command.step_id, status="done")
        return StepResult(events=[done], finished="done")

    # A reclaims nothing in this test's time and beats every 0.4 s; B reclaims entries
    # idle for 0.1 s, so it takes A's step long before A's first beat.
    slow = make_settings(claim_idle_ms=60_000, heartbeat_ms=400).bus
    eager = make_settings(claim_idle_ms=100).bus
    a = Worker(NOOP, handle, redis, slow, consumer="a")
    b = Worker(NOOP, handle, redis, eager, consumer="b")
    await a.ensure_groups()
    cmd = noop_command()
    await publish(redis, cmd, slow)

    async with running([a], redis):

        async def a_streamed() -> bool:
            return any(e.type == "answer" for e in await events_of(redis, cmd.run_id))

        await wait_for(a_streamed)
        async with running([b], redis):

            async def done() -> bool:
                return any(e.type == "done" for e in await events_of(redis, cmd.run_id))

            await wait_for(done)
            with contextlib.suppress(AssertionError):  # A's beat stops it, if it works
                await wait_for(lambda: asyncio.sleep(0, bool(stopped)), within=5)
        release.set()  # A goes on, if it was not stopped
        await asyncio.sleep(0.2)

    events = await events_of(redis, cmd.run_id)
    assert [e.type for e in events] == ["answer", "step_retry", "answer", "done"]
    assert fold(events).answer == "fresh"
    assert stopped == ["a"]
    [stats] = await group_stats(redis, keys.role_stream(NOOP, 0))
    assert stats.pending == 0


async def test_a_beat_after_the_steps_own_commit_leaves_it_to_finish(
    redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    """Past its handler, a step's entry is no longer pending because its own commit acked
    it: the beat that finds it so must not cancel what is left (its end, its metrics)."""
    worker = Worker(NOOP, handle_noop, redis, make_settings().bus, consumer="a")
    stream = keys.role_stream(NOOP, 0)
    settling = asyncio.create_task(asyncio.sleep(10))
    worker._inflight[(stream, b"1-0")] = settling  # pyright: ignore[reportPrivateUsage]
    worker._lost_claim(stream, b"1-0")  # pyright: ignore[reportPrivateUsage]
    await asyncio.sleep(0)
    assert not settling.cancelled()
    worker._in_handler.add((stream, b"1-0"))  # pyright: ignore[reportPrivateUsage]
    worker._lost_claim(stream, "1-0")  # pyright: ignore[reportPrivateUsage]
    with contextlib.suppress(asyncio.CancelledError):
        await settling
    assert settling.cancelled()
