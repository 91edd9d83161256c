"""What the chain does with failing tools, and what the audit hook receives."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.call_context import CallContext, GatewayDeps
from gateway.chain import invoke
from gateway.errors import ToolError
from gateway.outcome import AuditRecord, OutcomeStatus, ToolOutcome
from tests.unit.gateway.fakes import Echo, Scripted, call, context


async def test_a_crashing_tool_becomes_a_tool_error_without_a_traceback() -> None:
    async def crash(args: dict[str, Any], net: Any) -> dict[str, Any]:
        raise KeyError("internal detail")

    outcome = await invoke(call("crash"), context(Scripted("crash", crash)))
    assert (outcome.status, outcome.code) == (OutcomeStatus.ERROR, "tool_error")
    assert "KeyError" in outcome.message
    assert "Traceback" not in outcome.message and "internal detail" not in outcome.message


async def test_a_tool_error_message_reaches_the_model() -> None:
    async def fail(args: dict[str, Any], net: Any) -> dict[str, Any]:
        raise ToolError("the upstream API said no")

    outcome = await invoke(call("fail"), context(Scripted("fail", fail)))
    assert outcome.code == "tool_error" and outcome.message == "the upstream API said no"


# the audit hook


async def test_every_outcome_reaches_the_hook_with_redacted_arguments() -> None:
    records: list[AuditRecord] = []
    ctx = context(Echo(), records=records, enabled_tools=frozenset({"echo"}))
    ok = await invoke(call("echo", {"text": "x", "api_key": "sk-live-123"}), ctx)
    refused = await invoke(call("missing", {"password": "hunter2"}), ctx)
    assert [r.outcome.code for r in records] == [ok.code, refused.code] == ["ok", "unknown_tool"]
    assert records[1].outcome == refused
    first = records[0]
    assert (first.tenant_id, first.subject, first.run_id, first.agent) == (
        "t1",
        "alice",
        "run-1",
        "researcher",
    )
    assert (first.tool, first.call_id) == ("echo", "c-1")
    assert first.args == {"text": "x", "api_key": "[REDACTED]"}
    assert first.outcome.result == {"echo": {"text": "x", "api_key": "[REDACTED]"}}
    assert ok.result["echo"]["api_key"] == "sk-live-123"  # the model still gets its result
    assert records[1].args == {"password": "[REDACTED]"}
    assert "sk-live" not in repr(records) and "hunter2" not in repr(records)


async def test_unparseable_argument_text_is_not_stored() -> None:
    records: list[AuditRecord] = []
    await invoke(call("echo", '{"token": "abc'), context(Echo(), records=records))
    assert records[0].args == "[not a JSON object: 14 characters]"


async def test_a_failing_hook_propagates_so_the_message_is_not_acked() -> None:
    async def broken(record: AuditRecord) -> None:
        raise RuntimeError("audit store down")

    ctx = context(Echo())
    ctx = CallContext(
        tenant_id="t",
        subject="s",
        run_id="r",
        agent="a",
        policy=ctx.policy,
        deps=GatewayDeps(registry=ctx.deps.registry, on_outcome=broken),
    )
    with pytest.raises(RuntimeError, match="audit store down"):
        await invoke(call("echo", {"text": "x"}), ctx)


def test_outcomes_are_consistent_by_construction() -> None:
    with pytest.raises(ValueError):
        ToolOutcome(status=OutcomeStatus.ERROR, code="ok")
    with pytest.raises(ValueError):
        ToolOutcome(status=OutcomeStatus.ERROR, code="tool_error", result={"x": 1})
    with pytest.raises(ValueError):
        ToolOutcome(status=OutcomeStatus.EGRESS_BLOCKED, code="egress_blocked")
    blocked = ToolOutcome(
        status=OutcomeStatus.EGRESS_BLOCKED, code="egress_blocked", blocked_host="example.com"
    )
    assert blocked.model_dump(mode="json")["blocked_host"] == "example.com"
