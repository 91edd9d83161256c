"""The worker runtime: exactly-once progress, retries, dead letters, deadlines, cancel."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from redis.asyncio import Redis

from api.compose.settings import AppSettings
from bus import keys, wire
from bus.commands import AgentTask, Command, NoopTask
from bus.events import Done, ErrorEvent, StepRetry
from bus.noop import handle_noop
from bus.publish import publish, request_cancel
from bus.run_state import RunState
from bus.runtime.context import StepContext, StepResult
from bus.runtime.deadletter import list_dead_letters, replay
from bus.runtime.groups import group_stats
from bus.runtime.worker import Worker
from bus.settings import BusSettings
from bus.transcript import fold
from tests.support import drain, events_of, narrow, noop_command, stream_commands

NOOP = keys.Role.NOOP


def noop_worker(redis: Redis, settings: BusSettings, **kw: Any) -> Worker:
    return Worker(NOOP, handle_noop, redis, settings, **kw)


async def test_chain_runs_to_done_with_one_command_per_step(
    redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    s = make_settings().bus
    worker = noop_worker(redis, s, concurrency=4)
    await worker.ensure_groups()
    cmd = noop_command(hops=5, tokens=["a", "b"])
    await publish(redis, cmd, s)
    await drain([worker], redis)

    events = await events_of(redis, cmd.run_id)
    assert [e.type for e in events][-1] == "done"
    assert fold(events).answer == "ab" * 5
    steps = [c.step_id for c in await stream_commands(redis, NOOP)]
    assert len(steps) == len(set(steps)) == 5
    [stats] = await group_stats(redis, keys.role_stream(NOOP, 0))
    assert (stats.pending, stats.lag) == (0, 0)


async def test_groups_are_created_at_start_not_by_reading_from_zero(
    redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    s = make_settings().bus
    old = noop_command()
    await publish(redis, old, s)  # before the group exists: not for this group
    worker = noop_worker(redis, s)
    await worker.ensure_groups()
    await worker.ensure_groups()  # idempotent (BUSYGROUP ignored)
    await drain([worker], redis)
    assert await events_of(redis, old.run_id) == []


async def test_duplicate_delivery_of_a_done_step_changes_nothing(
    redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    s = make_settings().bus
    worker = noop_worker(redis, s)
    await worker.ensure_groups()
    cmd = noop_command(hops=2, tokens=["x"])
    await publish(redis, cmd, s)
    await drain([worker], redis)
    before_events = await events_of(redis, cmd.run_id)
    before_cmds = await stream_commands(redis, NOOP)

    await publish(redis, cmd, s)  # the same step delivered again
    await drain([worker], redis)

    assert await events_of(redis, cmd.run_id) == before_events
    assert len(await stream_commands(redis, NOOP)) == len(before_cmds) + 1  # only the copy
    [stats] = await group_stats(redis, keys.role_stream(NOOP, 0))
    assert stats.pending == 0


async def test_failing_step_is_retried_with_step_retry_and_no_duplicate_text(
    redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    s = make_settings().bus
    worker = noop_worker(redis, s)
    await worker.ensure_groups()
    cmd = noop_command(hops=1, tokens=["hello"], fail_times=2)
    await publish(redis, cmd, s)
    await drain([worker], redis)

    events = await events_of(redis, cmd.run_id)
    types = [e.type for e in events]
    assert types == ["step_retry", "step_retry", "answer", "done"]
    assert [e.delivery for e in events if e.type == "step_retry"] == [2, 3]
    assert fold(events).answer == "hello"


async def test_poison_message_is_dead_lettered_after_three_deliveries_others_go_on(
    redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    s = make_settings().bus
    worker = noop_worker(redis, s, concurrency=2)
    await worker.ensure_groups()
    poison = noop_command(hops=1, fail_times=99)
    healthy = noop_command(hops=3)
    await publish(redis, poison, s)
    await publish(redis, healthy, s)
    await drain([worker], redis)

    assert (await events_of(redis, healthy.run_id))[-1].type == "done"
    poison_events = await events_of(redis, poison.run_id)
    assert [e.type for e in poison_events][-2:] == ["error", "done"]
    assert narrow(Done, poison_events[-1]).status == "error"
    [(dead_id, letter)] = await list_dead_letters(redis, s)
    assert (letter.run_id, letter.reason, letter.deliveries) == (poison.run_id, "failed", 3)
    assert "scripted failure" in letter.error
    [stats] = await group_stats(redis, keys.role_stream(NOOP, 0))
    assert stats.pending == 0

    # The operator fixes the cause and replays: the step runs again from the stream.
    await replay(redis, dead_id)
    assert await list_dead_letters(redis, s) == []
    [stats] = await group_stats(redis, keys.role_stream(NOOP, 0))
    assert stats.lag >= 1


async def test_unparseable_message_is_dead_lettered_at_once(
    redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    s = make_settings().bus
    worker = noop_worker(redis, s)
    await worker.ensure_groups()
    stream = keys.role_stream(NOOP, 0)
    await redis.xadd(stream, {"data": json.dumps({"run_id": "r1", "role": "noop"})})
    await redis.xadd(stream, {"nodata": "x"})
    good = noop_command()
    await publish(redis, good, s)
    await drain([worker], redis)

    letters = sorted(letter.run_id or "" for _, letter in await list_dead_letters(redis, s))
    assert letters == ["", "r1"]
    assert all(letter.reason == "unparseable" for _, letter in await list_dead_letters(redis, s))
    assert [e.type for e in await events_of(redis, "r1")] == ["error", "done"]
    assert (await events_of(redis, good.run_id))[-1].type == "done"


async def test_expired_step_is_not_started_and_the_run_ends_timeout(
    redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    s = make_settings().bus
    started: list[str] = []

    async def handler(ctx: StepContext, command: Command) -> StepResult:
        started.append(command.step_id)
        return StepResult()

    worker = Worker(NOOP, handler, redis, s)
    await worker.ensure_groups()
    cmd = noop_command(deadline_s=-1)
    await publish(redis, cmd, s)
    await drain([worker], redis)
    assert started == []
    events = await events_of(redis, cmd.run_id)
    assert (events[0].type, narrow(ErrorEvent, events[0]).code) == ("error", "timeout")
    assert narrow(Done, events[-1]).status == "timeout"
    assert await redis.ttl(keys.run_events(cmd.run_id, 0)) <= s.events_ttl_s


async def test_steps_commit_after_the_servers_script_cache_was_flushed(
    redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    s = make_settings().bus
    first, second = noop_command(hops=1), noop_command(hops=2)
    worker = noop_worker(redis, s)
    await worker.ensure_groups()
    await publish(redis, first, s)
    await drain([worker], redis)  # the commit script is loaded and used
    await redis.script_flush()  # a restarted or flushed server forgets it
    await publish(redis, second, s)
    await drain([noop_worker(redis, s)], redis)
    for cmd in (first, second):
        events = await events_of(redis, cmd.run_id)
        assert [e.type for e in events] == ["done"] and narrow(Done, events[-1]).status == "done"


async def test_cancel_is_honoured_between_steps(
    redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    s = make_settings().bus
    worker = noop_worker(redis, s)
    await worker.ensure_groups()
    cmd = noop_command(hops=3)
    await request_cancel(redis, cmd.run_id, s)
    await publish(redis, cmd, s)
    await drain([worker], redis)
    events = await events_of(redis, cmd.run_id)
    assert [(e.type, getattr(e, "status", None)) for e in events][-1] == ("done", "cancelled")
    assert len(await stream_commands(redis, NOOP)) == 1  # nothing published after


async def test_pending_step_of_a_dead_consumer_is_reclaimed(
    redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    s = make_settings(claim_idle_ms=200).bus
    stream = keys.role_stream(NOOP, 0)
    dead = noop_worker(redis, s, consumer="dead-consumer")
    await dead.ensure_groups()
    cmd = noop_command(tokens=["t"])
    await publish(redis, cmd, s)
    # The dead consumer read it and crashed before committing: it stays pending.
    await redis.xreadgroup("noop", "dead-consumer", {stream: ">"}, count=1)
    await asyncio.sleep(0.25)

    alive = noop_worker(redis, s, consumer="alive")
    await drain([alive], redis)
    events = await events_of(redis, cmd.run_id)
    assert [e.type for e in events] == ["step_retry", "answer", "done"]
    assert narrow(StepRetry, events[0]).delivery == 2


async def test_long_step_keeps_its_claim(
    redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    s = make_settings(claim_idle_ms=200, heartbeat_ms=50).bus
    first = noop_worker(redis, s, consumer="first")
    second = noop_worker(redis, s, consumer="second")
    await first.ensure_groups()
    cmd = noop_command(tokens=["a", "b", "c"], work_s=0.9)  # > 4x the claim idle time
    await publish(redis, cmd, s)
    await drain([first, second], redis)
    events = await events_of(redis, cmd.run_id)
    assert [e.type for e in events] == ["answer", "answer", "answer", "done"]


async def test_group_is_recreated_when_the_stream_vanishes(
    redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    s = make_settings().bus
    worker = noop_worker(redis, s)
    await worker.ensure_groups()
    await redis.delete(keys.role_stream(NOOP, 0))  # e.g. FLUSHDB in an operator's hands
    task = asyncio.create_task(worker.run())
    await asyncio.sleep(0.1)
    cmd = noop_command()
    await publish(redis, cmd, s)
    for _ in range(200):
        if await events_of(redis, cmd.run_id):
            break
        await asyncio.sleep(0.02)
    worker.stop()
    await asyncio.wait_for(task, 5)
    assert (await events_of(redis, cmd.run_id))[-1].type == "done"


async def test_run_end_hook_sees_final_status(
    redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    s = make_settings().bus
    ended: list[tuple[str, str]] = []

    async def on_end(command: Command, status: str, ending: StepResult) -> None:
        ended.append((command.run_id, status))
        if status == "error":  # a dead-lettered step: the hook sees why, before the commit
            assert [e.type for e in ending.events] == ["error"]

    worker = noop_worker(redis, s, on_run_end=on_end)
    await worker.ensure_groups()
    ok, poison = noop_command(hops=2), noop_command(fail_times=9)
    await publish(redis, ok, s)
    await publish(redis, poison, s)
    await drain([worker], redis)
    assert sorted(ended) == sorted([(ok.run_id, "done"), (poison.run_id, "error")])


def test_wire_roundtrip_keeps_the_command() -> None:
    cmd = noop_command(hops=2, tokens=["a"])
    fields = {b"data": wire.encode(cmd).encode()}
    assert wire.decode_command(fields) == cmd
    assert isinstance(cmd.payload, NoopTask)


async def test_runs_on_every_shard_complete(
    redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    s = make_settings(shards=4).bus
    worker = noop_worker(redis, s, concurrency=4)
    await worker.ensure_groups()
    cmds = []
    for _ in range(12):
        cmd = noop_command(hops=2)
        cmd = cmd.model_copy(update={"shard": keys.shard_of(cmd.run_id, 4)})
        cmds.append(cmd)
        await publish(redis, cmd, s)
    assert len({c.shard for c in cmds}) > 1
    await drain([worker], redis)
    for cmd in cmds:
        assert (await events_of(redis, cmd.run_id, cmd.shard))[-1].type == "done"


async def test_finished_run_keys_expire_after_events_ttl(
    redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    s = make_settings(events_ttl_s=120, run_ttl_s=3600).bus
    worker = noop_worker(redis, s)
    await worker.ensure_groups()
    cmd = noop_command(hops=2)
    await publish(redis, cmd, s)
    await drain([worker], redis)
    assert 0 < await redis.ttl(keys.run_events(cmd.run_id, 0)) <= 120
    assert 0 < await redis.ttl(keys.run_steps(cmd.run_id, 0)) <= 120


async def test_oversized_command_fails_the_step_and_is_dead_lettered(
    redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    s = make_settings(max_message_bytes=2048).bus

    async def bloated(ctx: StepContext, command: Command) -> StepResult:
        big = NoopTask(hops_left=0, tokens=["x" * 4096])
        return StepResult(next=[command.follow(NOOP, big)])

    worker = Worker(NOOP, bloated, redis, s)
    await worker.ensure_groups()
    cmd = noop_command()
    await publish(redis, cmd, s)
    await drain([worker], redis)
    [(_, letter)] = await list_dead_letters(redis, s)
    assert "message_too_large" in letter.error or "byte budget" in letter.error
    assert len(await stream_commands(redis, NOOP)) == 1  # nothing oversized was published


async def test_metrics_count_outcomes(
    redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    from prometheus_client import REGISTRY

    def sample(outcome: str) -> float:
        value = REGISTRY.get_sample_value(
            "agentbus_messages_total", {"role": "noop", "outcome": outcome}
        )
        return value or 0.0

    s = make_settings().bus
    before_ok, before_dead = sample("ok"), sample("dead_lettered")
    worker = noop_worker(redis, s)
    await worker.ensure_groups()
    await publish(redis, noop_command(hops=3), s)
    await publish(redis, noop_command(fail_times=9), s)
    await drain([worker], redis)
    assert sample("ok") - before_ok == 3
    assert sample("dead_lettered") - before_dead == 1


async def test_join_publishes_its_command_once_when_the_last_member_arrives(
    redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    from bus.runtime.context import Join, join_values

    s = make_settings().bus
    seen: dict[str, dict[str, str]] = {}

    async def handler(ctx: StepContext, command: Command) -> StepResult:
        task = command.payload
        assert isinstance(task, NoopTask)
        if command.branch is None:  # the merge step
            seen[command.step_id] = await join_values(ctx, "g1")
            return StepResult(finished="done")
        merge = command.model_copy(update={"step": command.step + 1, "branch": None})
        join = Join(name="g1", member=command.branch, value=task.tokens[0], expected=3, then=merge)
        return StepResult(join=join)

    worker = Worker(NOOP, handler, redis, s, concurrency=3)
    await worker.ensure_groups()
    base = noop_command()
    for name in ("docs", "memory", "web"):
        branch = base.model_copy(
            update={"step": 1, "branch": name, "payload": NoopTask(hops_left=0, tokens=[name])}
        )
        await publish(redis, branch, s)
        if name == "docs":
            await publish(redis, branch, s)  # a duplicate contribution counts once
    await drain([worker], redis)
    assert list(seen.values()) == [{"docs": "docs", "memory": "memory", "web": "web"}]


async def test_an_error_that_cannot_succeed_on_retry_is_dead_lettered_at_once(
    redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    class Unfixable(Exception):
        retryable = False

    s = make_settings().bus
    calls: list[int] = []

    async def handler(ctx: StepContext, command: Command) -> StepResult:
        calls.append(ctx.delivery)
        raise Unfixable("bad credentials")

    worker = Worker(NOOP, handler, redis, s)
    await worker.ensure_groups()
    await publish(redis, noop_command(), s)
    await drain([worker], redis)
    assert calls == [1]
    [(_, letter)] = await list_dead_letters(redis, s)
    assert letter.deliveries == 1 and "bad credentials" in letter.error


async def test_blobs_live_under_the_run_and_cannot_reach_another_runs(
    redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    import pytest

    s = make_settings().bus
    mine, other = noop_command(), noop_command()
    ctx = StepContext(mine, 1, redis, s)
    key = await ctx.put_blob("tool-output", b"x" * 10_000)
    assert await ctx.get_blob(key) == b"x" * 10_000
    assert 0 < await redis.ttl(key) <= s.run_ttl_s
    foreign = await StepContext(other, 1, redis, s).put_blob("secret", b"theirs")
    with pytest.raises(ValueError, match="outside this run"):
        await ctx.get_blob(foreign)


async def test_a_command_sent_before_its_roles_first_worker_started_is_delivered(
    redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    # Any worker's start-up creates every role's group (at $), so a command a publisher
    # sends to a role none of whose workers has started yet waits for that role's workers.
    s = make_settings().bus
    await noop_worker(redis, s).ensure_groups()  # a worker of some other role starts
    cmd = noop_command().follow(keys.Role.FINALIZER, AgentTask(state=RunState(question="q")))
    await publish(redis, cmd, s)
    [stats] = [
        g
        for g in await group_stats(redis, keys.role_stream(keys.Role.FINALIZER, 0))
        if g.group == keys.group_name(keys.Role.FINALIZER)
    ]
    assert stats.lag == 1  # waiting for the finalizer's workers, not lost
