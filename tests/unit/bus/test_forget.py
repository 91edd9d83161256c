"""Forgetting runs in Redis: every key family of a run goes, nobody else's does."""

from __future__ import annotations

from typing import Any

from redis.asyncio import Redis

from bus import keys
from bus.forget import forget_runs, scrub_streams, shared_streams
from bus.store.turn_types import FirstTurn

GONE = "run-gone"
KEPT = "run-kept"
FIRST_TURN_OF = {GONE: "conv-a", KEPT: "conv-b"}


async def seed_run(client: Redis, run_id: str, tenant: str = "t1") -> None:
    redis: Any = client  # redis-py types these replies as sync-or-async
    shard = 0
    await redis.xadd(keys.run_events(run_id, shard), {"data": "{}"})
    await redis.sadd(keys.run_steps(run_id, shard), "s1")
    await redis.set(keys.run_blob(run_id, shard, "tool"), b"bulky")
    await redis.set(keys.run_call(run_id, shard, "c1"), b"outcome")
    await redis.set(keys.run_owner(run_id, shard), tenant.encode())
    await redis.rpush(keys.run_deliveries(run_id, shard), f"d-{run_id}")
    await redis.hset(keys.webhook_delivery(f"d-{run_id}", shard), "body", "{}")
    await redis.zadd(keys.webhook_due(shard), {f"d-{run_id}": 1.0})
    await redis.zadd(keys.webhook_watch(shard), {run_id: 1.0})
    await redis.zadd(keys.tenant_active_runs(tenant), {run_id: 1.0})
    await redis.hset(keys.budget_used(tenant, f"run:{run_id}"), "tok", 5)
    await redis.set(keys.budget_charged(tenant, f"{run_id}:1:llm"), b"1")
    await redis.set(keys.idempotency(tenant, f"digest-{run_id}"), f"{run_id} conv-1".encode())
    # Its conversation's first turn, named by the conversation: the value names the run.
    first = FirstTurn(run_id, tenant, "alice", "q", 60.0, 1.0)
    await redis.set(keys.conversation_first_turn(FIRST_TURN_OF[run_id], shard), first.dumps())


async def test_every_key_of_the_run_goes_and_the_other_runs_stay(redis: Redis) -> None:
    await seed_run(redis, GONE)
    await seed_run(redis, KEPT)
    client: Any = redis
    await client.hset(keys.budget_used("t1", "user:alice:day:2026-12-01"), "tok", 9)
    # A user whose id starts with alice's: not alice's counters.
    await client.hset(keys.budget_used("t1", "user:alice:x:day:2026-12-01"), "tok", 9)
    await client.hset(keys.budget_used("t1", "tenant:day:2026-12-01"), "tok", 18)

    deleted = await forget_runs(redis, "t1", [GONE], shards=1, subject="alice")

    names = {k.decode() async for k in redis.scan_iter(count=500)}
    assert not [n for n in names if GONE in n]
    # 6 run keys, the delivery, 2 budget keys, idempotency, the first turn, user day
    assert deleted == 12
    assert keys.conversation_first_turn("conv-a", 0) not in names
    assert keys.conversation_first_turn("conv-b", 0) in names
    assert keys.budget_used("t1", "user:alice:day:2026-12-01") not in names
    assert keys.budget_used("t1", "user:alice:x:day:2026-12-01") in names
    assert keys.budget_used("t1", "tenant:day:2026-12-01") in names
    assert len([n for n in names if KEPT in n]) == 10
    for shared in (keys.webhook_due(0), keys.webhook_watch(0), keys.tenant_active_runs("t1")):
        members = [m.decode() for m in await redis.zrange(shared, 0, -1)]
        assert members and not [m for m in members if GONE in m]


async def test_nothing_is_searched_for_no_runs_and_no_user(redis: Redis) -> None:
    await seed_run(redis, KEPT)
    assert await forget_runs(redis, "t1", [], shards=1) == 0
    assert await redis.exists(keys.run_events(KEPT, 0)) == 1


async def test_scrubbing_deletes_only_the_entries_that_name_the_runs(redis: Redis) -> None:
    stream = keys.role_stream(keys.Role.INTAKE, 0)
    for n in range(1200):  # past one page
        run_id = GONE if n % 100 == 0 else f"other-{n}"
        await redis.xadd(stream, {"data": f'{{"run_id": "{run_id}"}}'})
    await redis.xadd(keys.RESULTS_STREAM, {"data": f'{{"run_id": "{GONE}"}}'})

    deleted = await scrub_streams(redis, shared_streams(1), [GONE])

    assert deleted == 13
    entries = await redis.xrange(stream)
    assert len(entries) == 1188 and not [f for _, f in entries if GONE.encode() in f[b"data"]]
    assert await redis.xlen(keys.RESULTS_STREAM) == 0
