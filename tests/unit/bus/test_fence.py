"""The erasure fence: a fenced user's steps commit nothing but their ack, in any worker,
and users are named by a mark only the deployment's key computes."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from redis.asyncio import Redis

from api.compose.settings import AppSettings
from bus import epochs, keys
from bus.fence import Fence, erasure_key
from bus.noop import handle_noop
from bus.publish import publish
from bus.runtime.groups import group_stats
from bus.runtime.worker import Worker
from tests.integration.agents.round_trips import NO_ROLE, counting
from tests.support import drain, events_of, noop_command, stream_commands

NOOP = keys.Role.NOOP


def test_a_mark_is_keyed_by_the_deployment_and_names_no_one_readably() -> None:
    one, other = Fence(erasure_key(b"a" * 32)), Fence(erasure_key(b"b" * 32))
    mark = one.mark("t1", "alice@example.com")
    assert mark == one.mark("t1", "alice@example.com")
    assert mark != other.mark("t1", "alice@example.com")  # another deployment's key
    assert mark != one.mark("t2", "alice@example.com") != one.mark("t1", "bob@example.com")
    # Not the plain digest a dictionary of addresses reverses.
    plain = hashlib.sha256(b"t1\nalice@example.com").hexdigest()
    assert plain[:32] not in mark and "alice" not in mark


async def test_a_fenced_users_steps_commit_nothing_and_others_run_on(
    redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    s = make_settings().bus
    fence = Fence(erasure_key(b"k" * 32))
    released: list[str] = []

    async def release(command: object) -> None:
        released.append(getattr(command, "run_id", ""))

    worker = Worker(NOOP, handle_noop, redis, s, fence=fence, on_erased=release)
    await worker.ensure_groups()
    # No tokens: what a step streams while it runs is not a commit (erasure waits for the
    # steps under way before it deletes, `bus.quiesce`); the commit is what is fenced.
    hers = noop_command(hops=3)
    his = noop_command(hops=3, tokens=["y"]).model_copy(update={"subject": "bob"})
    await fence.raise_for(redis, "t1", "alice", shards=s.shards, ttl_s=60)
    await publish(redis, hers, s)
    await publish(redis, his, s)
    await drain([worker], redis)

    assert await events_of(redis, hers.run_id) == []  # not its step's events, not its end
    steps = [c.run_id for c in await stream_commands(redis, NOOP)]
    assert steps.count(hers.run_id) == 1  # its next command was never published
    assert released == [hers.run_id]  # its run's slots were given back
    assert [e.type for e in await events_of(redis, his.run_id)][-1] == "done"
    [stats] = await group_stats(redis, keys.role_stream(NOOP, 0))
    assert stats.pending == 0  # acked: nobody runs it again


async def test_a_step_at_a_fence_epoch_checks_only_a_user_who_may_be_fenced(redis: Redis) -> None:
    fence = Fence(erasure_key(b"k" * 32))
    await fence.raise_for(redis, "t1", "alice", shards=1, ttl_s=60)
    token = epochs.FENCE.set(await redis.get(keys.fence_epoch(0)))
    try:
        with counting() as costs:
            assert await fence.holds(redis, "t1", "alice", 0)
            assert not await fence.holds(redis, "t1", "bob", 0)
            assert not await fence.holds(redis, "t1", "carol", 0)
        # The marks once for the epoch, the key only for the user they name.
        assert dict(costs.redis_names[NO_ROLE]) == {"ZRANGE": 1, "EXISTS": 1}
        await fence.raise_for(redis, "t1", "bob", shards=1, ttl_s=60)
        # Delivered before the fence went up: a step under way, which the erasure waits for.
        assert not await fence.holds(redis, "t1", "bob", 0)
        epochs.FENCE.set(await redis.get(keys.fence_epoch(0)))
        assert await fence.holds(redis, "t1", "bob", 0)
    finally:
        epochs.FENCE.reset(token)


async def test_without_a_fence_epoch_the_key_is_always_checked(redis: Redis) -> None:
    fence = Fence(erasure_key(b"k" * 32))
    with counting() as costs:
        assert not await fence.holds(redis, "t1", "bob", 0)
        await fence.raise_for(redis, "t1", "bob", shards=1, ttl_s=60)
        assert await fence.holds(redis, "t1", "bob", 0)
    assert costs.redis_names[NO_ROLE]["EXISTS"] == 2
