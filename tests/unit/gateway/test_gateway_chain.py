"""Every check of the chain, in order, through `invoke`, with small fake tools."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import pytest

from gateway.chain import invoke
from gateway.outcome import OutcomeStatus
from gateway.ports import EgressClient
from gateway.spec import Risk
from tests.unit.gateway.fakes import Echo, Scripted, call, context


async def test_a_valid_call_returns_ok_with_the_result() -> None:
    echo = Echo()
    outcome, _ = await invoke(call("echo", {"text": "hi"}), context(echo))
    assert outcome.status is OutcomeStatus.OK and outcome.code == "ok"
    assert outcome.result == {"echo": {"text": "hi"}}
    assert not outcome.truncated and outcome.duration_ms >= 0


# 1. lookup


async def test_an_unknown_tool_lists_the_tools_the_caller_may_use() -> None:
    ctx = context(Echo("echo"), Echo("other"), agent_tools=frozenset({"echo"}))
    outcome, _ = await invoke(call("ecoh"), ctx)
    assert (outcome.status, outcome.code) == (OutcomeStatus.ERROR, "unknown_tool")
    assert "'ecoh'" in outcome.message and "available tools: echo" in outcome.message


# 2. permission


async def test_a_tool_the_tenant_did_not_enable_is_refused() -> None:
    echo = Echo()
    outcome, _ = await invoke(call("echo", {"text": "x"}), context(echo, enabled_tools=frozenset()))
    assert (outcome.status, outcome.code) == (OutcomeStatus.REFUSED, "permission_denied")
    assert "not enabled for this tenant" in outcome.message
    assert echo.calls == []


async def test_a_tool_outside_the_agents_tools_is_refused() -> None:
    ctx = context(Echo(), Echo("calc"), agent_tools=frozenset({"calc"}))
    outcome, _ = await invoke(call("echo", {"text": "x"}), ctx)
    assert outcome.code == "permission_denied"
    assert "'researcher' may not call 'echo'" in outcome.message and "calc" in outcome.message


async def test_permission_is_checked_before_the_arguments() -> None:
    outcome, _ = await invoke(call("echo", {"bad": 1}), context(Echo(), enabled_tools=frozenset()))
    assert outcome.code == "permission_denied"


# 3. risk approval


TENANT_OK = {"tenant_critical_tools": frozenset({"echo"})}
RUN_ASKS = {"approved_critical_tools": frozenset({"echo"})}


@pytest.mark.parametrize(
    ("risk", "policy", "refusal"),
    [
        (Risk.LOW, {}, None),
        (Risk.MEDIUM, {}, None),
        (Risk.HIGH, {}, "approval_required"),
        (Risk.HIGH, {"approve_high_risk": True}, None),
        # CRITICAL: no blanket switch is enough; the tenant and the run approve it by name.
        (Risk.CRITICAL, {"approve_high_risk": True}, "critical_tool_not_approved"),
        (Risk.CRITICAL, RUN_ASKS, "critical_tool_not_approved"),
        (Risk.CRITICAL, TENANT_OK | {"approve_high_risk": True}, "approval_required"),
        (Risk.CRITICAL, TENANT_OK | RUN_ASKS, None),
        (
            Risk.CRITICAL,
            TENANT_OK | {"approved_critical_tools": frozenset({"other"})},
            "approval_required",
        ),
        (
            Risk.CRITICAL,
            RUN_ASKS | {"tenant_critical_tools": frozenset({"other"})},
            "critical_tool_not_approved",
        ),
    ],
)
async def test_risk_approval(risk: Risk, policy: dict[str, Any], refusal: str | None) -> None:
    echo = Echo(risk=risk)
    outcome, _ = await invoke(call("echo", {"text": "x"}), context(echo, **policy))
    if refusal is None:
        assert outcome.status is OutcomeStatus.OK
    else:
        assert (outcome.status, outcome.code) == (OutcomeStatus.REFUSED, refusal)
        assert risk.value in outcome.message
        assert echo.calls == []


# 4. input schema


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({}, "text: is required"),
        ({"text": 5}, "text: must be of type string (got integer)"),
        ({"text": "x" * 21}, "text: must be at most 20 characters long (got 21)"),
        ({"text": "x", "count": 11}, "count: must be <= 10 (got 11)"),
        ({"text": "x", "count": 0}, "count: must be >= 1 (got 0)"),
        ({"text": "x", "count": "5"}, "count: must be of type integer (got string)"),
        ({"text": "x", "count": 2.5}, "count: must be of type integer (got number)"),
        ({"text": "x", "colour": "red"}, "colour: is not an allowed field"),
        ("{not json", "arguments are not valid JSON"),
        ([1, 2], "arguments must be a JSON object, got array"),
    ],
)
async def test_invalid_arguments_name_the_field_and_the_problem(args: Any, expected: str) -> None:
    echo = Echo()
    outcome, _ = await invoke(call("echo", args), context(echo))
    assert (outcome.status, outcome.code) == (OutcomeStatus.ERROR, "schema_invalid")
    assert expected in outcome.message
    assert echo.calls == []  # nothing was coerced, clamped, or run


async def test_arguments_sent_as_json_text_are_decoded_not_coerced() -> None:
    echo = Echo()
    outcome, _ = await invoke(call("echo", json.dumps({"text": "hi", "count": 3})), context(echo))
    assert outcome.result == {"echo": {"text": "hi", "count": 3}}


# 5. egress: a tool gets a client only if it declares hosts


async def test_a_tool_without_hosts_gets_no_network() -> None:
    echo = Echo()
    await invoke(call("echo", {"text": "x"}), context(echo))
    assert echo.calls[0][1] is None


async def test_a_tool_with_hosts_gets_an_egress_client() -> None:
    echo = Echo(hosts=("example.com",))
    await invoke(call("echo", {"text": "x"}), context(echo))
    assert isinstance(echo.calls[0][1], EgressClient)


# 6. timeout


async def test_a_slow_tool_times_out() -> None:
    async def sleepy(args: dict[str, Any], net: Any) -> dict[str, Any]:
        await asyncio.sleep(30)
        return {}

    outcome, _ = await invoke(call("sleepy"), context(Scripted("sleepy", sleepy, timeout_s=0.1)))
    assert (outcome.status, outcome.code) == (OutcomeStatus.ERROR, "timeout")
    assert "0.1s" in outcome.message
    assert outcome.duration_ms < 5_000


async def test_a_tools_own_timeout_error_is_a_tool_error() -> None:
    async def upstream(args: dict[str, Any], net: Any) -> dict[str, Any]:
        raise TimeoutError("upstream")

    outcome, _ = await invoke(call("up"), context(Scripted("up", upstream)))
    assert outcome.code == "tool_error"


# 7. output schema


@pytest.mark.parametrize(
    ("returned", "expected"),
    [
        ({"n": "three"}, "n: must be of type integer"),
        ({}, "n: is required"),
        (["not", "an", "object"], "returned list, not an object"),
        ({"n": math.nan}, "not plain JSON"),
    ],
)
async def test_output_that_breaks_the_schema_is_output_invalid(
    returned: Any, expected: str
) -> None:
    async def bad(args: dict[str, Any], net: Any) -> Any:
        return returned

    properties: dict[str, Any] = {"n": {"type": ["integer", "number"]}}
    schema = {"type": "object", "properties": properties, "required": ["n"]}
    if expected.startswith("n: must"):
        properties["n"] = {"type": "integer"}
    outcome, _ = await invoke(call("bad"), context(Scripted("bad", bad, output_schema=schema)))
    assert (outcome.status, outcome.code) == (OutcomeStatus.ERROR, "output_invalid")
    assert expected in outcome.message


# 8. output size


async def test_oversized_output_is_cut_and_marked_truncated() -> None:
    async def big(args: dict[str, Any], net: Any) -> dict[str, Any]:
        return {"title": "short", "body": "é" * 5_000, "items": list(range(2_000))}

    ctx = context(Scripted("big", big, max_output_bytes=1_000))
    outcome, _ = await invoke(call("big"), ctx)
    assert (outcome.status, outcome.code, outcome.truncated) == (
        OutcomeStatus.OK,
        "output_truncated",
        True,
    )
    size = len(json.dumps(outcome.result, ensure_ascii=False, separators=(",", ":")).encode())
    assert size <= 1_000
    assert outcome.result["title"] == "short"
    assert outcome.result["body"].endswith("…[truncated]")
