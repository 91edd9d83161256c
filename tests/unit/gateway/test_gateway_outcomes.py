"""What the chain does with failing tools, and the audit record of every call."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.chain import invoke
from gateway.errors import ToolError
from gateway.outcome import OutcomeStatus, ToolOutcome
from tests.unit.gateway.fakes import Echo, Scripted, call, context


async def test_a_crashing_tool_becomes_a_tool_error_without_a_traceback() -> None:
    async def crash(args: dict[str, Any], net: Any) -> dict[str, Any]:
        raise KeyError("internal detail")

    outcome, _ = await invoke(call("crash"), context(Scripted("crash", crash)))
    assert (outcome.status, outcome.code) == (OutcomeStatus.ERROR, "tool_error")
    assert "KeyError" in outcome.message
    assert "Traceback" not in outcome.message and "internal detail" not in outcome.message


async def test_a_tool_error_message_reaches_the_model() -> None:
    async def fail(args: dict[str, Any], net: Any) -> dict[str, Any]:
        raise ToolError("the upstream API said no")

    outcome, _ = await invoke(call("fail"), context(Scripted("fail", fail)))
    assert outcome.code == "tool_error" and outcome.message == "the upstream API said no"


# the audit record


async def test_every_outcome_comes_with_an_audit_record_of_redacted_arguments() -> None:
    ctx = context(Echo(), enabled_tools=frozenset({"echo"}))
    ok, ok_record = await invoke(call("echo", {"text": "x", "api_key": "sk-live-123"}), ctx)
    refused, refused_record = await invoke(call("missing", {"password": "hunter2"}), ctx)
    records = [ok_record, refused_record]
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
    _, record = await invoke(call("echo", '{"token": "abc'), context(Echo()))
    assert record.args == "[not a JSON object: 14 characters]"


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
