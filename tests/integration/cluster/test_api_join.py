"""The edge's join of a run's events (``api.app.joins.Joins``) on a cluster: the owner
key and the event stream are read in one pipeline, which needs them in one hash slot."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from redis.asyncio import Redis

from agentbus_bench.local_cluster import LocalCluster
from api.app.access import RunAccess, owner_value
from api.app.auth import Principal
from api.app.joins import JoinPlan, Joins
from api.streams.relay import Relay
from api.streams.run_owner import run_owner_of
from bus import keys
from bus.settings import BusSettings
from bus.store import KeyRole


async def test_the_owner_follows_a_fresh_run_and_one_with_events(
    redis: Redis, cluster: LocalCluster
) -> None:
    bus = BusSettings(redis_cluster=True, redis_url=cluster.url)
    # The fast path reads no store (one without methods would fail).
    no_store: Any = SimpleNamespace()
    relay = Relay(redis, shards=bus.shards)
    access = RunAccess(
        shard_of=relay.shard_of, run_owner=run_owner_of(redis), runs=no_store, audit=None
    )
    joins = Joins(
        access=access,
        events=relay,
        run_ttl_s=bus.run_ttl_s,
        events_ttl_s=bus.events_ttl_s,
    )
    alice = Principal("t1", "alice", KeyRole.USER, "k1")
    for run_id in ("join-a", "join-b", "join-c"):  # on different slots
        shard = keys.shard_of(run_id, bus.shards)
        owner = keys.run_owner(run_id, shard)
        await redis.set(owner, owner_value("t1", "alice"), ex=bus.run_ttl_s)

        ref, plan = await joins.join(alice, run_id, "0-0")  # no event yet
        assert plan == JoinPlan(None, "0-0") and ref.subject == "alice"

        await redis.xadd(keys.run_events(run_id, shard), {"data": "{}"})
        ref, plan = await joins.join(alice, run_id, "0-0")
        assert plan == JoinPlan(None, "0-0") and ref.record is None
