"""Retention passes against a real Redis and a real store: each tenant's policy, the Redis
side of pruned runs, blobs, a dry run, the lease, and `agentbus retention` / `erase`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta

import pytest
from redis.asyncio import Redis

from api.compose.retention import retention_of
from api.compose.settings import AppSettings
from bus import keys
from bus.retention import RetentionPolicy
from bus.retention_passes import Retention, RetentionLoop
from bus.store import RunRecord, RunStatus, Scope, Stores, open_store
from tests.conftest import TEST_REDIS_URL
from tests.processes import cli

NOW = datetime.now(UTC)


@pytest.fixture
async def stores(make_settings: Callable[..., AppSettings]) -> AsyncIterator[Stores]:
    async with open_store(make_settings().bus, migrate=True) as opened:
        yield opened


async def ended_run(
    stores: Stores, redis: Redis, run_id: str, tenant: str, days: int, subject: str = "alice"
) -> None:
    """A run that ended ``days`` ago, with an event stream and a blob in Redis."""
    at = NOW - timedelta(days=days)
    await stores.runs.create(
        RunRecord(
            id=run_id,
            tenant_id=tenant,
            subject=subject,
            mode="single",
            question=f"question {run_id}",
            status=RunStatus.DONE,
            created_at=at,
            updated_at=at,
            finished_at=at,
        )
    )
    await redis.xadd(keys.run_events(run_id, 0), {"data": "{}"})
    await redis.set(keys.run_blob(run_id, 0, "tool-result"), b"bulky")


async def run_ids(stores: Stores, tenant: str) -> set[str]:
    return {r.id for r in await stores.runs.list(Scope.tenant(tenant), limit=100)}


def retention(stores: Stores, redis: Redis, **defaults: int) -> Retention:
    assert stores.retention is not None
    return Retention(
        stores.retention, redis, defaults=RetentionPolicy(**defaults), batch=2, shards=1
    )


async def test_a_pass_applies_each_tenants_policy_over_the_default(
    stores: Stores, real_redis: Redis
) -> None:
    await stores.tenant_settings.put("t1", {"retention": {"runs": 30, "blobs": 7}}, "root")
    for n in range(3):
        await ended_run(stores, real_redis, f"t1-old-{n}", "t1", days=40)
    await ended_run(stores, real_redis, "t1-mid", "t1", days=10)
    await ended_run(stores, real_redis, "t1-new", "t1", days=1)
    await ended_run(stores, real_redis, "t2-old", "t2", days=40)
    await ended_run(stores, real_redis, "t3-old", "t3", days=400)
    # t3 set nothing: the deployment's default (365 days of runs) applies; t2 overrides it.
    await stores.tenant_settings.put("t2", {"retention": {"runs": 3650}}, "root")
    passes = retention(stores, real_redis, runs=365)

    dry = await passes.run(dry_run=True)
    assert dry.dry_run and dry.tenants["t1"]["runs"] == 3 and dry.tenants["t1"]["blobs"] == 4
    assert await real_redis.exists(keys.run_blob("t1-old-0", 0, "tool-result")) == 1

    report = await passes.run()
    assert report.tenants["t1"]["runs"] == 3  # in batches of two
    assert report.tenants["t1"]["redis_keys"] == 6  # each old run's events and blob
    assert report.tenants["t1"]["blobs"] == 1  # t1-mid's: ended past t1's 7 days of blobs
    assert report.tenants["t2"]["runs"] == 0 and report.tenants["t3"]["runs"] == 1

    left = {r for t in ("t1", "t2", "t3") for r in await run_ids(stores, t)}
    assert left == {"t1-mid", "t1-new", "t2-old"}
    assert await real_redis.exists(keys.run_events("t1-old-0", 0)) == 0
    assert await real_redis.exists(keys.run_events("t1-mid", 0)) == 1  # events: a run's
    assert await real_redis.exists(keys.run_blob("t1-mid", 0, "tool-result")) == 0
    assert await real_redis.exists(keys.run_blob("t1-new", 0, "tool-result")) == 1
    assert await real_redis.exists(keys.run_blob("t2-old", 0, "tool-result")) == 1


async def test_one_process_holds_the_lease_and_a_dead_holders_lease_passes_on(
    stores: Stores, real_redis: Redis
) -> None:
    passes = retention(stores, real_redis)
    first = RetentionLoop(passes, real_redis, interval_s=0.05, lease_ms=300)
    second = RetentionLoop(passes, real_redis, interval_s=0.05, lease_ms=300)
    assert await first.hold() and not await second.hold()
    assert await first.hold()  # renewing its own
    await asyncio.sleep(0.4)  # first died without renewing: its lease lapses
    assert await second.hold() and not await first.hold()

    task = asyncio.create_task(second.run_forever())
    await asyncio.sleep(0.2)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert not await first.hold()  # the loop kept renewing it


async def test_the_retention_and_erase_commands_print_what_they_deleted(
    stores: Stores, real_redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    s = make_settings()
    assert retention_of(s.bus, stores, real_redis) is not None
    await ended_run(stores, real_redis, "old", "t1", days=40)
    await ended_run(stores, real_redis, "alice-new", "t1", days=1)
    await ended_run(stores, real_redis, "bob-new", "t1", days=1, subject="bob")
    await stores.runs.create(
        RunRecord(id="bob-only", tenant_id="t1", subject="bob", mode="single", question="q")
    )
    env = {
        "AGENTBUS_REDIS_URL": TEST_REDIS_URL,
        "AGENTBUS_DATA_DIR": str(s.bus.data_dir),
        "AGENTBUS_RETENTION": '{"runs": 30}',
    }
    dry = await cli(["retention", "run", "--tenant", "t1", "--dry-run"], env)
    assert "t1: would delete runs 1," in dry
    done = await cli(["retention", "run", "--tenant", "t1"], env)
    assert "t1: deleted runs 1," in done
    shown = await cli(["retention", "show", "--tenant", "t1"], env)
    assert "t1: runs 30 days, messages forever" in shown
    assert "t1: runs 7 days, audit 400 days" in await cli(
        ["retention", "set", "--tenant", "t1", "--runs", "7", "--audit", "400"], env
    )
    await cli(["retention", "set", "--tenant", "t1", "--default", "runs"], env)
    shown = await cli(["retention", "show", "--tenant", "t1"], env)
    assert "t1: runs 30 days," in shown and "audit 400 days" in shown

    erased = await cli(["erase", "--user", "alice", "--tenant", "t1"], env)
    assert "erased alice of t1:" in erased and "runs 1" in erased
    assert await run_ids(stores, "t1") == {"bob-new", "bob-only"}
