"""The budget ledger against a real Redis: holds never grant more than a limit has left,
a call is charged once however often it settles, and a dead process's hold comes back."""

from __future__ import annotations

import asyncio
import time

import pytest
from redis.asyncio import Redis

from bus import keys
from bus.budget import BudgetLedger, Scope


def scopes(run_tokens: int | None = None, tenant_tokens: int | None = None) -> list[Scope]:
    return [
        Scope("run", "run:r1", tokens=run_tokens),
        Scope("tenant_month", "tenant:month:2026-12", tokens=tenant_tokens),
    ]


async def reserve(
    ledger: BudgetLedger,
    call: str,
    limits: list[Scope],
    want: int,
    need: int,
    *,
    expires_in: float = 60,
    price: float = 0.0,
):
    now = time.time()
    return await ledger.reserve(
        call,
        limits,
        want=want,
        need=need,
        micro_usd_per_token=price,
        now=now,
        expires_at=now + expires_in,
    )


async def test_a_hold_takes_what_is_left_and_a_refusal_names_the_tightest_budget(
    real_redis: Redis,
) -> None:
    ledger = BudgetLedger(real_redis, "t1")
    limits = scopes(run_tokens=1000, tenant_tokens=300)
    first = await reserve(ledger, "s1:m1", limits, want=200, need=50)
    second = await reserve(ledger, "s1:m2", limits, want=200, need=50)
    third = await reserve(ledger, "s1:m3", limits, want=200, need=50)
    assert (first.held, second.held) == (200, 100)  # the tenant's 300, no more
    assert not third.ok and third.refused == "tenant_month_tokens"
    assert await ledger.held("tenant:month:2026-12") == 300


async def test_a_call_is_charged_once_however_often_it_settles(real_redis: Redis) -> None:
    ledger = BudgetLedger(real_redis, "t1")
    limits = scopes(run_tokens=1000)
    await reserve(ledger, "s1:m1", limits, want=500, need=10)
    charged = await ledger.settle("s1:m1", limits, tokens=120, micro_usd=30)
    again = await ledger.settle("s1:m1", limits, tokens=120, micro_usd=30)
    assert charged is not None and charged["run"].tokens == 120 and again is None
    # A redelivered step reserving the same call again runs it, uncharged.
    redelivered = await reserve(ledger, "s1:m1", limits, want=500, need=10)
    assert redelivered.ok and redelivered.charged and redelivered.held == 0
    spent = await ledger.spent("run:r1")
    assert spent.tokens == 120 and spent.cost_usd == pytest.approx(0.00003)
    assert await ledger.held("run:r1") == 0  # the settle gave the hold back


async def test_a_call_that_held_nothing_is_charged_once_and_dated_counters_keep_their_first_expiry(
    real_redis: Redis,
) -> None:
    ledger = BudgetLedger(real_redis, "t1")
    counted = [
        Scope("run", "run:r1", ttl_s=600),
        Scope("tenant_day", "tenant:day:2026-12-06", ttl_s=900, dated=True),
    ]
    charged = await ledger.settle("s1:m1", counted, tokens=40, micro_usd=0, held=False)
    again = await ledger.settle("s1:m1", counted, tokens=40, micro_usd=0, held=False)
    assert charged is not None and charged["tenant_day"].tokens == 40 and again is None
    run_key, day_key = (keys.budget_used("t1", s.key) for s in counted)
    await real_redis.expire(run_key, 5)
    await real_redis.expire(day_key, 5)  # as if the day's counter were near its end
    await ledger.settle("s1:m2", counted, tokens=2, micro_usd=0, held=False)
    assert (await ledger.spent("run:r1")).tokens == 42
    assert await real_redis.ttl(run_key) > 500  # kept after its last charge
    assert await real_redis.ttl(day_key) <= 5  # its lifetime was set at its first
    assert await ledger.held("run:r1") == 0


async def test_a_redelivered_call_takes_its_own_hold_over(real_redis: Redis) -> None:
    ledger = BudgetLedger(real_redis, "t1")
    limits = scopes(run_tokens=300)
    await reserve(ledger, "s1:m1", limits, want=300, need=10)  # then the process dies
    again = await reserve(ledger, "s1:m1", limits, want=300, need=10)
    assert again.ok and again.held == 300  # not refused by its own earlier hold
    assert await ledger.held("run:r1") == 300


async def test_a_dead_process_hold_is_given_back_when_it_expires(real_redis: Redis) -> None:
    ledger = BudgetLedger(real_redis, "t1")
    limits = scopes(tenant_tokens=100)
    await reserve(ledger, "dead:m1", limits, want=100, need=10, expires_in=0.2)
    refused = await reserve(ledger, "live:m1", limits, want=50, need=10)
    assert refused.refused == "tenant_month_tokens"
    await asyncio.sleep(0.3)
    after = await reserve(ledger, "live:m1", limits, want=50, need=10)
    assert after.ok and after.held == 50
    assert await ledger.held("tenant:month:2026-12") == 50


async def test_a_growing_hold_stops_at_the_limit(real_redis: Redis) -> None:
    ledger = BudgetLedger(real_redis, "t1")
    limits = scopes(run_tokens=150)
    assert (await reserve(ledger, "s1:m1", limits, want=100, need=10)).held == 100
    grown = await reserve(ledger, "s1:m1", limits, want=200, need=120)
    assert grown.held == 150  # as much as is left
    cut = await reserve(ledger, "s1:m1", limits, want=250, need=151)
    assert cut.refused == "run_tokens"


async def test_a_cost_limit_refuses_by_dollars(real_redis: Redis) -> None:
    ledger = BudgetLedger(real_redis, "t1")
    limits = [Scope("run", "run:r1", micro_usd=1000)]  # $0.001
    grant = await reserve(ledger, "s1:m1", limits, want=1000, need=10, price=2.0)
    assert grant.held == 500  # 2 micro-dollars a token
    refused = await reserve(ledger, "s1:m2", limits, want=100, need=10, price=2.0)
    assert refused.refused == "run_cost_usd"


async def test_concurrent_holds_never_add_up_past_the_limit(real_redis: Redis) -> None:
    ledger = BudgetLedger(real_redis, "t1")
    limits = scopes(tenant_tokens=1000)
    grants = await asyncio.gather(
        *(reserve(ledger, f"s{i}:m1", limits, want=100, need=20) for i in range(32))
    )
    held = sum(g.held for g in grants if g.ok)
    assert held == 1000 and sum(1 for g in grants if not g.ok) == 22
