"""A side-effecting call's claim on a real Redis, with ``AGENTBUS_REDIS_WAIT_REPLICAS`` on a
server without replicas: the claim is not acknowledged, so the tool does not run and the
claim is dropped; the step's retry (acknowledged) runs it once and records it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from redis.asyncio import Redis

from agents.graph import next_role
from api.compose.settings import AppSettings
from bus import keys
from bus.commands import Command, RunState, ToolCallBatch, ToolCallRequest, deadline_in
from bus.errors import ReplicaAckMissing
from bus.events import ToolResult
from bus.redis_io.shared_mux import close_mux
from bus.runtime.context import StepContext
from gateway.call_context import GatewayDeps
from gateway.ports import EgressClient, TenantPolicy
from gateway.registry import ToolRegistry
from gateway.spec import ToolSpec
from gateway.tenants import DeploymentPolicies
from gateway.worker import make_gateway_handler
from tests.support import narrow


class Counted:
    """A side effect that counts its runs."""

    spec = ToolSpec(
        name="counted",
        description="Count.",
        input_schema={"type": "object"},
        output_schema={"type": "object"},
        side_effects=True,
    )

    def __init__(self) -> None:
        self.runs = 0

    async def run(self, args: dict[str, Any], net: EgressClient | None) -> dict[str, Any]:
        self.runs += 1
        return {"runs": self.runs}


async def test_an_unacknowledged_claim_runs_nothing_and_the_retry_runs_once(
    real_redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    tool = Counted()
    handler = make_gateway_handler(
        GatewayDeps(registry=ToolRegistry([tool])),
        DeploymentPolicies(TenantPolicy()),
        route=next_role,
    )
    cmd = Command(
        run_id="run-w",
        tenant_id="t1",
        subject="alice",
        role=keys.Role.GATEWAY,
        deadline=deadline_in(30),
        payload=ToolCallBatch(
            calls=[ToolCallRequest(call_id="c1", name="counted", arguments={})],
            state=RunState(question="q"),
            then="end",
        ),
    )
    waiting = make_settings(redis_wait_replicas=1, redis_wait_timeout_ms=50).bus
    try:
        with pytest.raises(ReplicaAckMissing):
            await handler(StepContext(cmd, 1, real_redis, waiting), cmd)
        assert tool.runs == 0
        assert not await real_redis.exists(keys.run_call_claim("run-w", 0, "c1"))
        result = await handler(StepContext(cmd, 2, real_redis, make_settings().bus), cmd)
        assert tool.runs == 1 and narrow(ToolResult, result.events[0]).result == {"runs": 1}
        assert await real_redis.exists(keys.run_call("run-w", 0, "c1"))
        again = await handler(StepContext(cmd, 3, real_redis, make_settings().bus), cmd)
        assert tool.runs == 1 and narrow(ToolResult, again.events[0]).result == {"runs": 1}
    finally:
        await close_mux(real_redis)
