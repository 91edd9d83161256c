"""A side-effecting call's claim on a Redis Cluster with replicas: on a shard of every
master, the claim, its lease and the recorded outcome live in the run's slot (one script
each), ``WAIT 1`` (the cluster's default) acknowledges the claim before the tool runs, so
a claim its replica never got is never run on, a dead claim ends ``outcome_unknown``, and
a tool that takes a key runs again with the same key."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable

import pytest
from redis import Redis as SyncRedis
from redis.asyncio import Redis
from redis.exceptions import RedisError

from agentbus_bench.local_cluster import LocalCluster
from agents.graph import next_role
from api.compose.settings import AppSettings
from bus import keys
from bus.runtime.context import StepContext
from gateway.call_context import GatewayDeps
from gateway.once import idempotency_key
from gateway.ports import TenantPolicy
from gateway.registry import ToolRegistry
from gateway.tenants import DeploymentPolicies
from gateway.worker import make_gateway_handler
from tests.support import wait_for
from tests.unit.gateway.test_call_once import Effect, batch


@pytest.mark.parametrize("shard", [0, 1, 2])
async def test_claims_hold_on_a_shard_of_every_master(
    redis: Redis,
    cluster: LocalCluster,
    make_settings: Callable[..., AppSettings],
    shard: int,
) -> None:
    settings = make_settings(
        redis_cluster=True, redis_wait_replicas=1, redis_wait_timeout_ms=2000
    ).bus

    async def deliver(tool: Effect, delivery: int) -> list[str]:
        handler = make_gateway_handler(
            GatewayDeps(registry=ToolRegistry([tool])),
            DeploymentPolicies(TenantPolicy()),
            route=next_role,
        )
        cmd = batch(shard=shard)
        result = await handler(StepContext(cmd, delivery, redis, settings), cmd)
        return [e.code for e in result.events if e.type == "tool_result"]

    for keyed in (False, True):
        await cluster_flush(cluster)
        tool = Effect(takes_key=keyed)
        tool.release.clear()
        first = asyncio.create_task(deliver(tool, 1))  # its gateway dies while the tool runs
        await tool.started.wait()
        first.cancel()
        await asyncio.gather(first, return_exceptions=True)
        tool.release.set()
        claim = keys.run_call_claim("run-1", shard, "c1")
        assert cluster.master_of(claim) == cluster.master_of(keys.role_stream("gateway", shard))
        assert await redis.exists(claim)  # it outlives its holder
        assert await deliver(tool, 2) == (["ok"] if keyed else ["outcome_unknown"])
        assert tool.runs == (2 if keyed else 1)
        if keyed:
            assert tool.keys == [idempotency_key("t1", "run-1", "c1")] * 2
            assert await deliver(tool, 3) == ["ok"] and tool.runs == 2  # recorded now


async def cluster_flush(cluster: LocalCluster) -> None:
    await asyncio.to_thread(cluster.flush)


async def test_a_claim_acknowledged_by_a_replica_survives_its_masters_failover(
    redis: Redis, cluster: LocalCluster, make_settings: Callable[..., AppSettings]
) -> None:
    """With ``WAIT 1`` the claim is on the replica before the tool runs: the master dies
    with the tool under way, its replica takes over, and the redelivery finds the claim
    there (dead by then) and answers ``outcome_unknown`` instead of running the tool again."""
    settings = make_settings(
        redis_cluster=True, redis_wait_replicas=1, redis_wait_timeout_ms=2000
    ).bus
    await cluster_flush(cluster)
    tool = Effect(takes_key=False)
    tool.release.clear()

    async def deliver(delivery: int) -> list[str]:
        handler = make_gateway_handler(
            GatewayDeps(registry=ToolRegistry([tool])),
            DeploymentPolicies(TenantPolicy()),
            route=next_role,
        )
        cmd = batch(shard=0)
        result = await handler(StepContext(cmd, delivery, redis, settings), cmd)
        return [e.code for e in result.events if e.type == "tool_result"]

    first = asyncio.create_task(deliver(1))  # its gateway dies while the tool runs
    await tool.started.wait()
    first.cancel()
    await asyncio.gather(first, return_exceptions=True)
    tool.release.set()
    claim = keys.run_call_claim("run-1", 0, "c1")
    victim = cluster.master_of(claim)
    replica = cluster.replica_of(victim)
    cluster.kill(victim)

    async def promoted() -> bool:
        return victim not in cluster.master_ports() and replica in cluster.master_ports()

    await wait_for(promoted, within=30, interval=0.1)
    try:
        codes: list[str] | None = None
        for _ in range(50):  # a redelivery; the first tries may meet the old slot map
            try:
                codes = await deliver(2)
                break
            except Exception:  # any broker error during the failover: try again
                await asyncio.sleep(0.2)
        assert codes == ["outcome_unknown"]
        assert tool.runs == 1
    finally:
        cluster.start_node(victim)  # rejoins as the new master's replica
        await asyncio.to_thread(cluster.wait_ok)


async def test_a_claim_its_replica_never_got_does_not_run_the_tool_twice_over_a_failover(
    redis: Redis, cluster: LocalCluster, make_settings: Callable[..., AppSettings]
) -> None:
    """The cluster's default settings. The replica is cut off, so a claim stays on its
    master alone; the master then dies and the replica, resumed, takes over without it.
    Waiting for the replica, the first delivery never runs the tool (the claim is not
    acknowledged: the step is retried), and the retry on the new master runs it: once.
    Without the wait the tool would run on the master's claim and again on the new one."""
    settings = make_settings(redis_cluster=True).bus
    assert settings.redis_wait_replicas == 1  # the default on a cluster, not set here
    await cluster_flush(cluster)
    tool = Effect(takes_key=False)
    tool.release.clear()

    async def deliver(delivery: int) -> list[str]:
        handler = make_gateway_handler(
            GatewayDeps(registry=ToolRegistry([tool])),
            DeploymentPolicies(TenantPolicy()),
            route=next_role,
        )
        cmd = batch(shard=0)
        result = await handler(StepContext(cmd, delivery, redis, settings), cmd)
        return [e.code for e in result.events if e.type == "tool_result"]

    claim = keys.run_call_claim("run-1", 0, "c1")
    victim = cluster.master_of(claim)
    replica = cluster.replica_of(victim)
    # Replication stops here: the replica is stopped and its link cut from the master's
    # side (stopped alone, it would still find the claim in its socket's buffer).
    cluster.procs[replica].send_signal(signal.SIGSTOP)
    try:
        await asyncio.to_thread(_cut_replicas_of, victim)
        first = asyncio.create_task(deliver(1))
        started = asyncio.create_task(tool.started.wait())
        await asyncio.wait([first, started], timeout=30, return_when=asyncio.FIRST_COMPLETED)
        # Its gateway dies now: with the tool under way (no wait), or once the claim
        # went unacknowledged (the wait: the step is retried; the tool never started).
        first.cancel()
        started.cancel()
        await asyncio.gather(first, started, return_exceptions=True)
        runs_before_failover = tool.runs
        cluster.kill(victim)
    finally:
        cluster.procs[replica].send_signal(signal.SIGCONT)
    tool.release.set()
    await asyncio.to_thread(_take_over, replica)

    async def promoted() -> bool:
        return replica in cluster.master_ports()

    await wait_for(promoted, within=30, interval=0.1)
    cluster.start_node(victim)  # rejoins as the new master's replica: the wait can be met
    await asyncio.to_thread(cluster.wait_ok)
    codes: list[str] | None = None
    for _ in range(50):  # the retried step; the first tries may meet the old slot map
        try:
            codes = await deliver(2)
            break
        except Exception:  # a broker error during the failover, or a WAIT not yet met
            await asyncio.sleep(0.2)
    assert (runs_before_failover, codes, tool.runs) == (0, ["ok"], 1), _where(cluster, claim)
    assert await deliver(3) == ["ok"] and tool.runs == 1  # recorded on the new master


def _where(cluster: LocalCluster, key: str) -> str:
    """Each live node's role, epochs and what it holds under ``key``: what a failure shows."""
    lines = []
    for port in cluster.live_ports():
        node = SyncRedis(port=port, socket_timeout=5, decode_responses=True)
        try:
            role = cluster.info(port, "replication")
            node.execute_command("READONLY")  # a replica answers for its master's slots
            epochs = {k: v for k, v in cluster.info(port).items() if k.endswith("epoch")}
            lines.append(
                f"{port} {role['role']} of {role.get('master_port', '-')}, {epochs}: "
                f"{node.get(key)!r}"
            )
        except RedisError as e:
            lines.append(f"{port}: {e}")
        finally:
            node.close()
    return "\n".join(lines)


def _cut_replicas_of(port: int) -> None:
    """Close the master's connections to its replicas."""
    node = SyncRedis(port=port, socket_timeout=5)
    try:
        node.execute_command("CLIENT", "KILL", "TYPE", "replica")
    finally:
        node.close()


def _take_over(port: int) -> None:
    """Promote the replica on ``port`` now (its master is dead; no vote is needed)."""
    node = SyncRedis(port=port, socket_timeout=5)
    try:
        with contextlib.suppress(RedisError):  # already promoted by the cluster itself
            node.execute_command("CLUSTER", "FAILOVER", "TAKEOVER")
    finally:
        node.close()
