"""The gateway role's handler on fakeredis: tenant policy, `then`, at-most-once effects, audit."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
from redis.asyncio import Redis

from agents.graph import next_role
from api.compose.settings import AppSettings
from bus import keys
from bus.commands import Command, RunSettings, RunState, ToolCallBatch, ToolCallRequest, deadline_in
from bus.events import ToolResult
from bus.runtime.context import StepContext, StepResult
from gateway.call_context import GatewayDeps
from gateway.ports import EgressClient, TenantPolicy
from gateway.registry import ToolRegistry
from gateway.tenants import DeploymentPolicies
from gateway.tools import Calculator
from gateway.worker import make_gateway_handler
from tests.support import narrow
from tests.unit.gateway.fakes import Echo, Scripted


class Counter(Scripted):
    """A side-effecting tool that counts its real runs."""

    def __init__(self) -> None:
        self.runs = 0

        async def behaviour(args: dict[str, Any], net: EgressClient | None) -> dict[str, Any]:
            self.runs += 1
            return {"run": self.runs, "token": "secret-value"}

        super().__init__("counter", behaviour, side_effects=True)


def command(
    *calls: ToolCallRequest,
    then: str = "return",
    purpose: str = "research",
    agent: str = "researcher",
    **settings: Any,
) -> Command:
    return Command(
        run_id="run-1",
        tenant_id="t1",
        subject="alice",
        role=keys.Role.GATEWAY,
        deadline=deadline_in(60),
        groups=("staff",),
        payload=ToolCallBatch(
            agent=agent,
            purpose=purpose,  # type: ignore[arg-type]
            calls=list(calls),
            state=RunState(question="q", settings=RunSettings(**settings)),
            then=then,  # type: ignore[arg-type]
        ),
    )


def req(name: str, call_id: str = "c1", **args: Any) -> ToolCallRequest:
    return ToolCallRequest(call_id=call_id, name=name, arguments=args)


@pytest.fixture
def step(fake_redis: Redis, make_settings: Callable[..., AppSettings]) -> Any:
    async def run(handler: Any, cmd: Command, delivery: int = 1) -> StepResult:
        return await handler(StepContext(cmd, delivery, fake_redis, make_settings().bus), cmd)

    return run


def policies(**policy: Any) -> DeploymentPolicies:
    return DeploymentPolicies(TenantPolicy(**policy))


def outcomes(result: StepResult) -> list[ToolResult]:
    """The step's ``tool_result`` events, in order."""
    return [e for e in result.events if isinstance(e, ToolResult)]


async def written(redis: Redis) -> list[tuple[str, str | None]]:
    """The run's events written so far: (type, call id)."""
    rows = await redis.xrange(keys.run_events("run-1", 0))
    docs = [json.loads(fields[b"data"]) for _, fields in rows]
    return [(d["type"], d.get("call_id")) for d in docs]


class Waiting(Scripted):
    """A tool that waits until the test lets it finish."""

    def __init__(self) -> None:
        self.running = asyncio.Event()
        self.finish = asyncio.Event()

        async def behaviour(args: dict[str, Any], net: EgressClient | None) -> dict[str, Any]:
            self.running.set()
            await self.finish.wait()
            return {"waited": True}

        super().__init__("waiting", behaviour)


async def test_results_go_back_along_the_graph_as_tool_results(step: Any) -> None:
    handler = make_gateway_handler(
        GatewayDeps(registry=ToolRegistry([Calculator()])), policies(), route=next_role
    )
    result = await step(handler, command(req("calculator", expression="2+2")))
    [back] = result.next
    assert back.role == keys.Role.RESEARCHER and back.step == 1
    assert back.payload.kind == "tool_results" and back.payload.purpose == "research"
    [outcome] = back.payload.results
    assert (outcome.call_id, outcome.name, outcome.status, outcome.result) == (
        "c1",
        "calculator",
        "ok",
        {"expression": "2+2", "result": 4},
    )
    # the gateway never edits the state
    assert back.payload.state == narrow(ToolCallBatch, command().payload).state
    shown, event = result.events  # the calculator never waits: its commit shows the call
    assert (shown.type, shown.call_id, shown.tool) == ("tool_call", "c1", "calculator")
    assert (event.type, event.status, event.duration_ms is not None) == ("tool_result", "ok", True)


@pytest.mark.parametrize(
    ("accuracy", "judge"), [("standard", keys.Role.CRITIC), ("accurate", keys.Role.VERIFIER)]
)
async def test_fact_check_results_go_back_to_the_last_judge(
    step: Any, accuracy: str, judge: keys.Role
) -> None:
    handler = make_gateway_handler(
        GatewayDeps(registry=ToolRegistry([Calculator()])), policies(), route=next_role
    )
    cmd = command(
        req("calculator", expression="6*7"),
        purpose="fact_check",
        agent=judge.value,
        mode="multi",
        accuracy=accuracy,
    )
    [back] = (await step(handler, cmd)).next
    assert back.role == judge and back.payload.purpose == "fact_check"
    assert back.payload.results[0].result == {"expression": "6*7", "result": 42}


@pytest.mark.parametrize(
    ("purpose", "agent"), [("research", "researcher"), ("fact_check", "critic")]
)
async def test_the_tenant_tool_scope_binds_the_fact_check_too(
    step: Any, purpose: str, agent: str
) -> None:
    deps = GatewayDeps(registry=ToolRegistry([Calculator(), Echo()]))
    handler = make_gateway_handler(deps, policies(), route=next_role)
    cmd = command(
        req("calculator", expression="6*7"),
        req("echo", call_id="c2", text="hi"),
        purpose=purpose,
        agent=agent,
        mode="multi",
        researcher_tools=["echo"],
    )
    [back] = (await step(handler, cmd)).next
    refused, allowed = back.payload.results
    assert (refused.status, refused.code) == ("refused", "permission_denied")
    assert allowed.status == "ok"


async def test_then_end_finishes_the_run_after_the_results(step: Any) -> None:
    handler = make_gateway_handler(
        GatewayDeps(registry=ToolRegistry([Calculator()])), policies(), route=next_role
    )
    result = await step(handler, command(req("calculator", expression="6*7"), then="end"))
    assert not result.next and result.finished == "done"
    assert [e.type for e in result.events] == ["tool_call", "tool_result", "done"]
    assert outcomes(result)[0].result == {"expression": "6*7", "result": 42}


async def test_the_tenant_policy_decides_tools_and_egress(step: Any) -> None:
    deps = GatewayDeps(registry=ToolRegistry([Calculator(), Echo()]))
    handler = make_gateway_handler(
        deps, policies(enabled_tools=frozenset({"echo"})), route=next_role
    )
    result = await step(handler, command(req("calculator", expression="1"), then="end"))
    assert outcomes(result)[0].code == "permission_denied"
    result = await step(handler, command(req("echo", text="hi"), then="end"))
    assert outcomes(result)[0].status == "ok"


async def test_a_redelivered_side_effect_returns_the_recorded_outcome(step: Any) -> None:
    counter = Counter()
    handler = make_gateway_handler(
        GatewayDeps(registry=ToolRegistry([counter])), policies(), route=next_role
    )
    first = await step(handler, command(req("counter"), then="end"))
    # A delivery whose commit never happened (the worker died): the tool must not run again.
    again = await step(handler, command(req("counter"), then="end"), delivery=2)
    assert counter.runs == 1
    done = {"run": 1, "token": "[REDACTED]"}
    assert outcomes(first)[0].result == outcomes(again)[0].result == done
    # The audit record is re-sent under the same key: the recorder keeps one row per call id.
    [record] = first.records
    assert list(again.records) == [record]
    assert record.key == "run-1:0:0:0" and record.data["once_per_call"] is True
    assert record.data["entry"]["tool"] == "counter"
    assert "secret-value" not in str(record.data)


async def test_a_call_that_waits_is_shown_while_it_runs(step: Any, fake_redis: Redis) -> None:
    tool = Waiting()
    handler = make_gateway_handler(
        GatewayDeps(registry=ToolRegistry([tool])), policies(), route=next_role
    )
    running = asyncio.ensure_future(step(handler, command(req("waiting"))))
    await asyncio.wait_for(tool.running.wait(), 5)
    await asyncio.sleep(0.05)  # the event's write, on its way while the tool runs
    assert await written(fake_redis) == [("tool_call", "c1")]
    tool.finish.set()
    result = await running
    assert [(e.type, e.call_id) for e in result.events] == [("tool_result", "c1")]


async def test_calls_are_shown_in_their_order_before_any_result(
    step: Any, fake_redis: Redis
) -> None:
    tool = Waiting()
    handler = make_gateway_handler(
        GatewayDeps(registry=ToolRegistry([Calculator(), tool])), policies(), route=next_role
    )
    cmd = command(req("calculator", expression="2+2"), req("waiting", call_id="c2"))
    running = asyncio.ensure_future(step(handler, cmd))
    await asyncio.wait_for(tool.running.wait(), 5)
    await asyncio.sleep(0.05)
    # The calculator's call, not shown by a write of its own, goes out with the next one's.
    assert await written(fake_redis) == [("tool_call", "c1"), ("tool_call", "c2")]
    tool.finish.set()
    result = await running
    assert [(e.type, e.call_id) for e in result.events] == [
        ("tool_result", "c1"),
        ("tool_result", "c2"),
    ]


async def test_deployment_policies_parse_the_settings() -> None:
    p = DeploymentPolicies.from_settings(
        egress_enabled=True,
        allowed_egress_hosts="Example.COM, *.wiki.org",
        mcp_servers='[{"name": "files", "command": ["srv"]}]',
    )
    tenant = await p.for_tenant("anyone")
    assert tenant.egress_enabled and tenant.allowed_egress_hosts == {"example.com", "*.wiki.org"}
    assert [s.name for s in tenant.mcp_servers] == ["files"]
    assert tenant.mcp_servers[0].risk == "HIGH"
    mine = tenant.overlay(egress_enabled=False, enabled_tools=frozenset({"calculator"}))
    assert not mine.egress_enabled and mine.mcp_servers == tenant.mcp_servers
