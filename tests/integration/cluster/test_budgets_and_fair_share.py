"""Budgets and fair admission on a Redis Cluster: a tenant's budget counters live in one
slot (its hash tag), and each shard's admission queue in its shard's slot, so the same
scripts run unchanged on a shard of every master."""

from __future__ import annotations

import time
from collections.abc import Callable

from redis.asyncio import Redis

from api.compose.settings import AppSettings
from bus import keys
from bus.budget import BudgetLedger, Scope
from bus.fairshare import FairShare


async def test_budget_holds_and_charges_run_in_the_tenant_slot(redis: Redis) -> None:
    scopes = [Scope("run", "run:r1", tokens=100), Scope("tenant_month", "tenant:month:x")]
    for tenant in ("t1", "t2", "t3"):  # three tenants, whatever masters their slots are on
        ledger = BudgetLedger(redis, tenant)
        now = time.time()
        grant = await ledger.reserve(
            "s1:m1", scopes, want=150, need=10, micro_usd_per_token=0, now=now, expires_at=now + 60
        )
        assert grant.held == 100
        assert await ledger.settle("s1:m1", scopes, tokens=40, micro_usd=0) is not None
        assert await ledger.settle("s1:m1", scopes, tokens=40, micro_usd=0) is None
        assert (await ledger.spent("run:r1")).tokens == 40


async def test_each_shard_admits_by_turn_on_its_own_master(
    redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    settings = make_settings(redis_cluster=True, shards=3).bus
    fair = FairShare(redis, settings)
    deadline = time.time() + 60
    for shard in range(3):
        for tenant, n in (("a", 3), ("b", 1)):
            for i in range(n):
                run = f"{tenant}{i}-{shard}"
                await fair.enqueue(shard, tenant, "interactive", run, deadline, run)
        assert await fair.open_room(shard, 2) == 2
        rows = await redis.xrange(keys.role_stream(keys.Role.INTAKE, shard))
        assert [f[b"data"].decode() for _, f in rows] == [f"b0-{shard}", f"a0-{shard}"]
