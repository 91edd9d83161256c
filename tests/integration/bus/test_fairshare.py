"""Fair admission against a real Redis: who is admitted next when a shard has room, by
tenant turn, weight and priority; a full tenant queue refuses; room comes back when runs end
or their admitting process dies."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from redis.asyncio import Redis

from api.compose.settings import AppSettings
from bus import keys
from bus.fairshare import FairShare
from bus.run_state import Priority

INTAKE = keys.role_stream(keys.Role.INTAKE, 0)


async def admitted(redis: Redis) -> list[str]:
    """The commands on the intake stream, in order (here each is just its run id)."""
    return [fields[b"data"].decode() for _, fields in await redis.xrange(INTAKE)]


async def queue(
    fair: FairShare, tenant: str, n: int, *, priority: Priority = "interactive", weight: int = 1
) -> list[int | None]:
    deadline = time.time() + 60
    return [
        await fair.enqueue(
            0, tenant, priority, f"{tenant}{i}", deadline, f"{tenant}{i}", weight=weight
        )
        for i in range(n)
    ]


def fair_share(redis: Redis, make_settings: Callable[..., AppSettings], **bus: Any) -> FairShare:
    return FairShare(redis, make_settings(**bus).bus)


async def test_a_flooding_tenant_does_not_keep_another_waiting(
    real_redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    fair = fair_share(real_redis, make_settings, fair_inflight=2)
    await queue(fair, "a", 10)
    await queue(fair, "b", 1)
    assert await admitted(real_redis) == ["a0", "a1"]  # the shard's room: two runs
    await fair.finished(0, "a0")
    assert (await admitted(real_redis))[-1] == "b0"  # B's turn, not A's third
    await fair.finished(0, "a1")
    await fair.finished(0, "b0")
    assert (await admitted(real_redis))[-2:] == ["a2", "a3"]


async def test_weights_share_the_room_in_proportion(
    real_redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    fair = fair_share(real_redis, make_settings)  # room from the researchers' capacity
    await queue(fair, "a", 8, weight=3)
    await queue(fair, "c", 8, weight=1)
    assert await admitted(real_redis) == []  # no researcher announced any room yet
    assert await fair.open_room(0, 8) == 8
    order = [run[0] for run in await admitted(real_redis)]
    assert order == ["c", "a", "a", "a", "c", "a", "a", "a"]  # c joined last: at the head


async def test_interactive_runs_go_before_batch_work(
    real_redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    fair = fair_share(real_redis, make_settings)
    await queue(fair, "batch", 3, priority="batch")
    await queue(fair, "chat", 2)
    await fair.open_room(0, 3)
    assert await admitted(real_redis) == ["chat0", "chat1", "batch0"]


async def test_a_full_tenant_queue_refuses_and_others_still_queue(
    real_redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    fair = fair_share(real_redis, make_settings, fair_max_pending=3)
    assert await queue(fair, "a", 4) == [0, 0, 0, None]  # the fourth is refused
    assert await queue(fair, "b", 1) == [0]
    assert await fair.open_room(0, 10) == 4
    assert sorted(await admitted(real_redis)) == ["a0", "a1", "a2", "b0"]


async def test_room_of_a_dead_researcher_and_of_runs_past_their_deadline_comes_back(
    real_redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    fair = fair_share(real_redis, make_settings)
    past = time.time() - 1  # admitted runs whose end was never reported leave at deadline
    for i in range(2):
        await fair.enqueue(0, "a", "interactive", f"old{i}", past, f"old{i}")
    await queue(fair, "a", 1)
    await fair.open_room(0, 2)
    assert await admitted(real_redis) == ["old0", "old1", "a0"]  # the old ones took no room
    # A researcher that stops ticking takes its capacity with it (three ticks later).
    capacity = keys.fair_keys(0)[keys.FAIR_PARTS.index("capacity")]
    members = await real_redis.zrange(capacity, 0, -1, withscores=True)
    assert len(members) == 1 and members[0][1] < time.time() + 4


async def test_a_run_that_finds_nothing_waiting_and_room_is_admitted_leaving_no_queue(
    real_redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    fair = fair_share(real_redis, make_settings, fair_inflight=1)
    assert await queue(fair, "a", 1) == [1]  # admitted by the call that queued it
    assert await queue(fair, "b", 1) == [0]  # the shard is full: b waits
    await fair.finished(0, "a0")
    assert await admitted(real_redis) == ["a0", "b0"]
    # Admitted at once (a0) or from the queue (b0), nothing of either is left waiting.
    part = dict(zip(keys.FAIR_PARTS, keys.fair_keys(0), strict=True))
    for name in ("ring:interactive", "credit:interactive", "queue:interactive", "seq", "pending"):
        assert await real_redis.exists(part[name]) == 0, name
    for tenant in ("a", "b"):  # as queueing them set it
        assert await real_redis.hget(part["weight"], tenant) == b"1"  # pyright: ignore[reportGeneralTypeIssues] (redis-py: T | Awaitable[T])
    assert await real_redis.zrange(part["inflight"], 0, -1) == [b"b0"]
