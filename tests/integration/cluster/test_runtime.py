"""The worker runtime's suite on a Redis Cluster: the same tests, the cluster client.

The tests are the ones of ``tests/unit/bus/test_runtime.py`` (imported, so they are one
suite); the ``redis`` fixture here is a cluster client (see ``conftest.py``).
"""

# The imported tests are collected here, on the cluster: not unused.
# pyright: reportUnusedImport=false

from __future__ import annotations

from collections.abc import Callable

from redis.asyncio import Redis

from agentbus_bench.local_cluster import LocalCluster
from api.compose.settings import AppSettings
from bus import keys
from bus.publish import publish
from bus.settings import CLUSTER_SHARDS, BusSettings
from tests.support import drain, events_of, noop_command
from tests.unit.bus.test_runtime import (  # noqa: F401 (collected here, on the cluster)
    noop_worker,
    test_an_error_that_cannot_succeed_on_retry_is_dead_lettered_at_once,
    test_blobs_live_under_the_run_and_cannot_reach_another_runs,
    test_cancel_is_honoured_between_steps,
    test_chain_runs_to_done_with_one_command_per_step,
    test_duplicate_delivery_of_a_done_step_changes_nothing,
    test_expired_step_is_not_started_and_the_run_ends_timeout,
    test_failing_step_is_retried_with_step_retry_and_no_duplicate_text,
    test_finished_run_keys_expire_after_events_ttl,
    test_group_is_recreated_when_the_stream_vanishes,
    test_groups_are_created_at_start_not_by_reading_from_zero,
    test_join_publishes_its_command_once_when_the_last_member_arrives,
    test_long_step_keeps_its_claim,
    test_oversized_command_fails_the_step_and_is_dead_lettered,
    test_pending_step_of_a_dead_consumer_is_reclaimed,
    test_poison_message_is_dead_lettered_after_three_deliveries_others_go_on,
    test_run_end_hook_sees_final_status,
    test_runs_on_every_shard_complete,
    test_steps_commit_after_the_servers_script_cache_was_flushed,
    test_unparseable_message_is_dead_lettered_at_once,
)


def test_the_default_shards_land_on_every_master(cluster: LocalCluster) -> None:
    s = BusSettings(redis_cluster=True, redis_url=cluster.url)
    assert s.shards == CLUSTER_SHARDS
    assert BusSettings(redis_cluster=True, shards=1).shards == 1  # set: kept
    # A cluster waits for a replica by default (the once-only claim survives a failover).
    assert s.redis_wait_replicas == 1 and BusSettings().redis_wait_replicas == 0
    assert BusSettings(redis_cluster=True, redis_wait_replicas=0).redis_wait_replicas == 0
    owners = [cluster.master_of(keys.role_stream(keys.Role.NOOP, k)) for k in range(s.shards)]
    assert sorted(owners) == sorted(cluster.master_ports())  # one shard on each


async def test_runs_on_the_default_shards_complete_on_every_master(
    redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    s = make_settings(redis_cluster=True).bus
    worker = noop_worker(redis, s, concurrency=8)
    await worker.ensure_groups()
    cmds = []
    for _ in range(40):
        cmd = noop_command(hops=3, tokens=["x"])
        cmd = cmd.model_copy(update={"shard": keys.shard_of(cmd.run_id, s.shards)})
        cmds.append(cmd)
        await publish(redis, cmd, s)
    assert {c.shard for c in cmds} == set(range(s.shards))
    await drain([worker], redis)
    for cmd in cmds:
        events = await events_of(redis, cmd.run_id, cmd.shard)
        assert [e.type for e in events].count("done") == 1
