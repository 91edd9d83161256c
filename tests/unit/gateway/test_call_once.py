"""A side-effecting call is claimed before its tool runs (fakeredis): a redelivery waits on a
live claim, answers ``outcome_unknown`` on a dead one, and re-runs a tool that takes an
idempotency key with the same key. Tools without side effects touch no claim keys."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from redis.asyncio import Redis

from agents.graph import next_role
from api.compose.settings import AppSettings
from bus import keys
from bus.commands import Command, RunState, ToolCallBatch, ToolCallRequest, deadline_in
from bus.events import ToolResult
from bus.runtime.context import StepContext, StepResult
from bus.runtime.leases import PROCESS_TOKEN, Leases
from gateway.call_context import GatewayDeps
from gateway.errors import EgressBlocked
from gateway.once import idempotency_key
from gateway.ports import Caller, EgressClient, TenantPolicy
from gateway.registry import ToolRegistry
from gateway.spec import ToolSpec
from gateway.tenants import DeploymentPolicies
from gateway.tools import Calculator
from gateway.worker import make_gateway_handler


def outcome(result: StepResult) -> ToolResult:
    """The step's first ``tool_result`` (a call that never waits has its ``tool_call`` first)."""
    return next(e for e in result.events if isinstance(e, ToolResult))


class Effect:
    """A side-effecting tool that counts its real runs and the keys it was given; a run
    may be held open until ``release`` is set (a tool still running)."""

    def __init__(self, *, takes_key: bool = False, blocked: bool = False) -> None:
        self.runs = 0
        self.keys: list[str | None] = []
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.release.set()
        self.blocked = blocked
        self.spec = ToolSpec(
            name="effect",
            description="A side effect.",
            input_schema={"type": "object", "additionalProperties": False},
            output_schema={"type": "object"},
            side_effects=True,
            takes_idempotency_key=takes_key,
        )

    async def run(self, args: dict[str, Any], net: EgressClient | None) -> dict[str, Any]:
        raise AssertionError("the gateway calls run_as")

    async def run_as(
        self, caller: Caller, args: dict[str, Any], net: EgressClient | None
    ) -> dict[str, Any]:
        self.runs += 1
        self.keys.append(caller.idempotency_key)
        self.started.set()
        await self.release.wait()
        if self.blocked:
            raise EgressBlocked("blocked", host="h.example")
        return {"run": self.runs}


def batch(
    call_id: str = "c1", name: str = "effect", step: int = 0, shard: int = 0, **args: Any
) -> Command:
    return Command(
        run_id="run-1",
        tenant_id="t1",
        subject="alice",
        role=keys.Role.GATEWAY,
        shard=shard,
        step=step,
        deadline=deadline_in(30),
        payload=ToolCallBatch(
            calls=[ToolCallRequest(call_id=call_id, name=name, arguments=args)],
            state=RunState(question="q"),
            then="end",
        ),
    )


@pytest.fixture
def deliver(fake_redis: Redis, make_settings: Callable[..., AppSettings]) -> Any:
    """Run a gateway delivery of ``cmd`` for ``tool`` (claim idle time, so lease, 300 ms)."""
    settings = make_settings(claim_idle_ms=300).bus

    async def run(tool: Any, cmd: Command, delivery: int = 1, leases: Any = None) -> StepResult:
        handler = make_gateway_handler(
            GatewayDeps(registry=ToolRegistry([tool, Calculator()])),
            DeploymentPolicies(TenantPolicy()),
            route=next_role,
        )
        return await handler(StepContext(cmd, delivery, fake_redis, settings, leases), cmd)

    return run


async def died_mid_call(deliver: Any, tool: Effect) -> None:
    """A first delivery that dies while its tool runs (cancelled, as by a kill)."""
    tool.release.clear()
    first = asyncio.create_task(deliver(tool, batch()))
    await tool.started.wait()
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    tool.release.set()


async def test_a_call_whose_holder_died_unrecorded_is_answered_outcome_unknown(
    deliver: Any,
) -> None:
    tool = Effect()
    await died_mid_call(deliver, tool)
    again = await deliver(tool, batch(), delivery=2)
    assert tool.runs == 1  # not run a second time
    [event] = [e for e in again.events if e.type == "tool_result"]
    assert (event.status, event.code) == ("error", "outcome_unknown")
    assert "may or may not have run" in event.message
    [record] = again.records
    entry = record.data["entry"]
    assert (entry["code"], entry["status"]) == ("outcome_unknown", "error")
    assert "may or may not have run" in entry["message"]


async def test_a_tool_that_takes_a_key_runs_again_with_the_same_key(deliver: Any) -> None:
    tool = Effect(takes_key=True)
    await died_mid_call(deliver, tool)
    again = await deliver(tool, batch(), delivery=2)
    assert tool.runs == 2
    assert tool.keys[0] == tool.keys[1] == idempotency_key("t1", "run-1", "c1")
    assert len(tool.keys[0] or "") == 64
    [event] = [e for e in again.events if e.type == "tool_result"]
    assert (event.status, event.result) == ("ok", {"run": 2})
    # Recorded now: a third delivery returns that outcome without running the tool.
    third = await deliver(tool, batch(), delivery=3)
    assert tool.runs == 2 and outcome(third).result == {"run": 2}


def test_keys_differ_per_tenant_run_and_call() -> None:
    base = idempotency_key("t1", "run-1", "c1")
    assert base == idempotency_key("t1", "run-1", "c1")
    others = {
        idempotency_key("t2", "run-1", "c1"),
        idempotency_key("t1", "run-2", "c1"),
        idempotency_key("t1", "run-1", "c2"),
    }
    assert base not in others and len(others) == 3


async def test_an_overlapping_delivery_waits_for_the_running_one_and_returns_its_outcome(
    deliver: Any, fake_redis: Redis
) -> None:
    tool = Effect()
    tool.release.clear()
    leases = Leases(fake_redis, "gw-a", 300)
    first = asyncio.create_task(deliver(tool, batch(), leases=leases))
    await tool.started.wait()
    second = asyncio.create_task(deliver(tool, batch(), delivery=2))
    for _ in range(6):  # past the lease's life: the holder's heartbeat keeps it alive
        await asyncio.sleep(0.1)
        assert await leases.refresh() == []
    assert not second.done()
    tool.release.set()
    one, two = await asyncio.gather(first, second)
    assert tool.runs == 1
    assert outcome(one).result == outcome(two).result == {"run": 1}


async def test_a_waiting_delivery_answers_outcome_unknown_when_the_lease_ends(
    deliver: Any,
) -> None:
    tool = Effect()
    tool.release.clear()
    stalled = asyncio.create_task(deliver(tool, batch()))  # no heartbeat keeps its lease
    await tool.started.wait()
    again = await asyncio.wait_for(deliver(tool, batch(), delivery=2), 5)
    assert outcome(again).code == "outcome_unknown" and tool.runs == 1
    stalled.cancel()
    await asyncio.gather(stalled, return_exceptions=True)


async def test_an_egress_blocked_call_is_not_recorded_so_the_gates_retry_runs_it(
    deliver: Any,
) -> None:
    tool = Effect(blocked=True)
    first = await deliver(tool, batch())
    assert outcome(first).status == "egress_blocked"
    tool.blocked = False
    retried = await deliver(tool, batch(step=1))  # the same call, after a person allowed it
    assert tool.runs == 2 and outcome(retried).result == {"run": 2}


async def test_calls_without_side_effects_or_refused_by_a_check_write_no_claim(
    deliver: Any, fake_redis: Redis
) -> None:
    tool = Effect()
    result = await deliver(tool, batch(name="calculator", expression="1+1"))
    assert outcome(result).result == {"expression": "1+1", "result": 2}
    result = await deliver(tool, batch(unexpected=1))  # refused by the input schema
    assert outcome(result).code == "schema_invalid" and tool.runs == 0
    assert [k async for k in fake_redis.scan_iter("*:call:*")] == []


async def test_a_lease_is_refreshed_only_while_it_holds_its_holders_value(
    fake_redis: Redis,
) -> None:
    leases = Leases(fake_redis, "gw-a", 200)
    mine = leases.holder("step|1")
    assert mine == f"gw-a/{PROCESS_TOKEN}|step|1"  # a restarted "gw-a" holds other values
    await fake_redis.set("lease", mine, px=200)
    leases.hold("lease", mine)
    await asyncio.sleep(0.15)
    assert await leases.refresh() == []
    assert 150 < await fake_redis.pttl("lease") <= 200
    await fake_redis.set("lease", "someone else", px=200)
    assert await leases.refresh() == ["lease"]
    leases.release("lease")
    assert await leases.refresh() == []


async def test_a_restarted_worker_does_not_take_its_earlier_lifes_claim_for_its_own(
    deliver: Any, fake_redis: Redis
) -> None:
    # The same consumer name, step and delivery, from a process that has since died: the
    # claim it left differs from this process's in the per-start token only.
    cmd = batch()
    earlier = f"gw-a/{'0' * 12}|{cmd.step_id}|2"
    await fake_redis.set(keys.run_call_claim("run-1", 0, "c1"), earlier)
    tool = Effect()
    again = await deliver(tool, cmd, delivery=2, leases=Leases(fake_redis, "gw-a", 300))
    assert tool.runs == 0 and outcome(again).code == "outcome_unknown"
