"""A step of a run no budget limits is charged with its commit: once, however often it is
delivered; a step cut short by a cancel still counts what it spent; a step of a user
being erased counts nothing; on a cluster the charge goes just before the commit, once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from redis.asyncio import Redis

from api.compose.settings import AppSettings
from bus import keys
from bus.budget import BudgetLedger, Charge, Scope, Spent
from bus.commands import Command
from bus.fence import Fence
from bus.noop import handle_noop
from bus.publish import publish, request_cancel
from bus.runtime.context import StepContext, StepResult
from bus.runtime.worker import Handler, Worker
from bus.settings import BusSettings
from tests.support import drain, events_of, noop_command

DAY = Scope("user_day", "user:alice:day:2026-12-06", ttl_s=3 * 86_400, dated=True)
MONTH = Scope("tenant_month", "tenant:month:2026-12", ttl_s=62 * 86_400, dated=True)


class Seen:
    """The totals each charge reported."""

    def __init__(self) -> None:
        self.totals: list[dict[str, Spent]] = []

    def charge(self, tokens: int = 62, micro_usd: int = 7) -> Charge:
        return Charge("t1", [DAY, MONTH], tokens, micro_usd, self.totals.append)


def charging(make: Callable[[], Charge]) -> Handler:
    """The no-op handler, its every step having spent ``make()``."""

    async def handle(ctx: StepContext, command: Command) -> StepResult:
        return replace(await handle_noop(ctx, command), charge=make())

    return handle


async def spent(redis: Redis, scope: Scope) -> Spent:
    return await BudgetLedger(redis, "t1").spent(scope.key)


async def run_steps(
    redis: Redis, settings: BusSettings, command: Command, seen: Seen, **kw: Any
) -> None:
    worker = Worker(keys.Role.NOOP, charging(seen.charge), redis, settings, **kw)
    await worker.ensure_groups()
    await publish(redis, command, settings)
    await drain([worker], redis)


async def test_each_committed_step_is_charged_once_and_a_redelivery_adds_nothing(
    redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    s, seen = make_settings().bus, Seen()
    command = noop_command(hops=2)
    await run_steps(redis, s, command, seen)
    assert await spent(redis, DAY) == Spent(124, 14 / 1e6)
    assert await spent(redis, MONTH) == Spent(124, 14 / 1e6)
    # A dated counter gets its lifetime at its first charge.
    assert 0 < await redis.ttl(keys.budget_used("t1", DAY.key)) <= DAY.ttl_s
    assert [t["user_day"].tokens for t in seen.totals] == [62, 124]

    await run_steps(redis, s, command, seen)  # the first step delivered again
    assert (await spent(redis, DAY)).tokens == 124
    assert len(seen.totals) == 2


async def test_a_step_cancelled_while_it_ran_still_counts_what_it_spent(
    redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    s, seen = make_settings().bus, Seen()
    command = noop_command(hops=3)
    await request_cancel(redis, command.run_id, s)  # the step finds it at its commit
    await run_steps(redis, s, command, seen)
    last = (await events_of(redis, command.run_id))[-1]
    assert (last.type, getattr(last, "status", None)) == ("done", "cancelled")
    assert (await spent(redis, DAY)).tokens == 62


async def test_a_step_of_a_user_being_erased_is_not_charged(
    redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    s, seen = make_settings().bus, Seen()
    fence = Fence(b"k" * 32)
    command = noop_command(hops=2)
    await redis.set(fence.key_of("t1", "alice", command.shard), "1")
    await run_steps(redis, s, command, seen, fence=fence)
    assert await spent(redis, DAY) == Spent()
    assert seen.totals == []


async def test_on_a_cluster_the_charge_goes_before_the_commit_once_per_step(
    redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    plain = make_settings().bus
    # The cluster's way of charging, on one server (its counters live in another slot).
    s = BusSettings.model_validate(
        {**plain.model_dump(), "redis_cluster": True, "shards": 1, "redis_wait_replicas": 0}
    )
    seen = Seen()
    command = noop_command(hops=2)
    await run_steps(redis, s, command, seen)
    await run_steps(redis, s, command, seen)  # the first step delivered again
    assert await spent(redis, DAY) == Spent(124, 14 / 1e6)
    assert [t["tenant_month"].tokens for t in seen.totals] == [62, 124]
