"""Contracts read across releases: every frozen sample of an earlier version loads into
today's models with its values, and a field a newer release adds is ignored, not refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from structlog.testing import capture_logs

from bus import readers, wire
from bus.commands import (
    AgentTask,
    GatherTask,
    MergeTask,
    QuestionSettings,
    RunResult,
    ToolCallBatch,
)
from bus.events import ApprovalRequest, Done, parse_event
from bus.readers import COMMAND, LEDGER_RECORD, QUESTION, checkpoint_state
from bus.run_state import EvidenceItem
from bus.store.checkpoints import CheckpointRecord
from gateway.audit import AUDIT_ENTRY
from gateway.webhooks.watcher import WEBHOOK_SPEC

SAMPLES = Path(__file__).parents[2] / "samples"


def sample(name: str) -> Any:
    return json.loads((SAMPLES / f"{name}.json").read_text())


def entry(doc: Any) -> dict[bytes, bytes]:
    return {b"data": json.dumps(doc).encode()}


def test_command_v1_samples_load_as_version_2_with_their_values() -> None:
    critic, batch, gather, merge = [wire.decode_command(entry(d)) for d in sample("command.v1")]
    assert (critic.schema_version, critic.role, critic.step, critic.attempt) == (2, "critic", 7, 1)
    assert critic.groups == ("staff",) and critic.trace.traceparent is not None
    assert isinstance(critic.payload, AgentTask)
    state = critic.payload.state
    assert state.settings.mode == "multi" and state.settings.accuracy == "accurate"
    assert [m.role for m in state.messages] == ["system", "user", "assistant", "tool"]
    assert state.messages[2].tool_calls[0].arguments == {"expression": "23*19"}
    assert state.messages[3].tool_call_id == "r1:3:0:0"
    assert [(r.agent, r.verdict, r.reason) for r in state.critiques] == [
        ("critic", "REVISE", "cite the policy")
    ]
    assert state.verdicts[0].verdict == "pass"
    # What v1 kept of a source's hit beyond what is cited (a score) is left behind.
    assert state.evidence == [
        EvidenceItem(
            ref=1,
            source_kind="documents",
            id="d1:0",
            source="docs/limits.md",
            title="Limits",
            heading="Rate limits",
            text="Requests are limited to 10 a second.",
        )
    ]
    assert (state.judge.phase, state.judge.hops) == ("done", 1)
    assert state.judge.findings == "437 confirmed by the calculator."
    assert [e.ref for e in state.judge.recheck] == [2]
    assert state.judge.messages[0].content == "Check the figures."
    assert state.usage == {"input_tokens": 120, "output_tokens": 40}
    # Results go back to the thread v1 named: the judge's is the fact-check.
    assert isinstance(batch.payload, ToolCallBatch)
    assert (batch.payload.purpose, batch.payload.agent) == ("fact_check", "verifier")
    assert batch.payload.calls[0].call_id == "r1:8:1:0"
    assert isinstance(gather.payload, GatherTask) and gather.payload.purpose == "recheck"
    assert gather.branch == "documents"
    assert isinstance(merge.payload, MergeTask) and merge.payload.join == "r1-2"


def test_command_v2_samples_from_0_2_0_load_unchanged() -> None:
    for doc in sample("command.v2"):
        command = wire.decode_command(entry(doc))
        assert json.loads(command.model_dump_json()) == doc


def test_a_checkpoint_of_0_2_0_resumes_with_its_run_state() -> None:
    doc = sample("checkpoint.v2")
    assert "state_version" not in doc  # 0.2.0 wrote none
    record = CheckpointRecord.model_validate(doc | {"state_version": None})  # a NULL column
    state = checkpoint_state(record.state, record.state_version)
    assert state.draft == "23 × 19 = 437, and requests are limited to 10 a second [1]."
    assert state.settings.human_gate and state.settings.budgets.run_tokens == 20000
    assert state.judge.checks[0].claim == "437"
    assert json.loads(state.model_dump_json()) == sample("run_state.v2")


def test_a_run_state_of_version_1_is_upcast_where_a_checkpoint_says_so() -> None:
    state = checkpoint_state(sample("run_state.v1"), 1)
    assert state.critiques[0].verdict == "REVISE" and state.evidence[0].ref == 1
    assert state.judge.recheck[0].source == "docs/limits.md"


def test_event_v1_samples_parse_unchanged() -> None:
    docs = sample("event.v1")
    events = [parse_event(json.dumps(d)) for d in docs]
    assert [json.loads(e.model_dump_json()) for e in events] == docs
    assert isinstance(events[8], ApprovalRequest) and events[8].answer == "437"
    assert isinstance(events[-1], Done) and events[-1].verified is True


def test_question_ledger_audit_and_webhook_samples_load() -> None:
    signed, by_key = [QUESTION.read_json(json.dumps(d)) for d in reversed(sample("question.v1"))]
    assert signed.key_id == "0123456789ab" and signed.question == "And 19 × 23?"
    assert by_key.settings.token_budget == 5000 and by_key.webhook_approvals
    result = RunResult.model_validate(sample("run_result.v1"))  # what publishers read back
    assert (result.status, result.answer, result.verified) == ("done", "437", True)
    record = LEDGER_RECORD.read_json(json.dumps(sample("ledger_record.v1")))
    assert (record.kind, record.key, record.tenant_id) == ("audit", "r2:4:0:r2:3:0:0", "t1")
    entry = AUDIT_ENTRY.read(record.data["entry"] | {"sandboxed": True})
    assert (entry.tool, entry.args, entry.duration_ms) == (
        "calculator",
        {"expression": "23*19"},
        1.5,
    )
    spec = WEBHOOK_SPEC.read_json(json.dumps(sample("webhook_spec.v1") | {"events": ["done"]}))
    assert (spec.url, spec.approvals, spec.conversation_id) == (
        "https://hooks.example.com/agentbus",
        True,
        "c1",
    )


def _with_new_fields(doc: dict[str, Any]) -> dict[str, Any]:
    doc = json.loads(json.dumps(doc))
    doc["priority_hint"] = "low"
    doc["trace"]["baggage"] = "k=v"
    state = doc["payload"]["state"]
    state["mood"] = "curious"
    state["messages"][2]["tool_calls"][0]["timeout_s"] = 5
    state["settings"]["budgets"]["per_tool_tokens"] = 100
    state["judge"]["checks"][0]["unit"] = "none"
    return doc


def test_todays_reader_ignores_fields_a_newer_release_adds_and_logs_each_once() -> None:
    readers._noted.clear()  # pyright: ignore[reportPrivateUsage]
    doc = sample("command.v2")[0]
    with capture_logs() as logs:
        first = wire.decode_command(entry(_with_new_fields(doc)))
        again = wire.decode_command(entry(_with_new_fields(doc)))
    assert first == again == wire.decode_command(entry(doc))
    noted = sorted(str(e["field"]) for e in logs if e["event"] == "unknown field ignored")
    assert noted == [
        "payload.state.judge.checks.unit",
        "payload.state.messages.tool_calls.timeout_s",
        "payload.state.mood",
        "payload.state.settings.budgets.per_tool_tokens",
        "priority_hint",
        "trace.baggage",
    ]


def test_every_bus_contract_tolerates_an_added_field() -> None:
    event = parse_event(json.dumps(sample("event.v1")[-1] | {"latency_ms": 12}))
    assert isinstance(event, Done) and event.answer == "437"
    record = LEDGER_RECORD.read_json(json.dumps(sample("ledger_record.v1") | {"shard": 2}))
    assert record.key == "r2:4:0:r2:3:0:0"
    state = checkpoint_state(sample("run_state.v2") | {"scratch": []}, 2)
    assert state.next_ref == 2
    command = COMMAND.read(sample("command.v2")[2] | {"lane": "fast"})
    assert command.role == "verifier"


def test_a_field_of_the_wrong_type_is_still_refused() -> None:
    doc = json.loads(json.dumps(sample("command.v2")[0]))
    doc["payload"]["state"]["tool_hops"] = "many"
    doc["surprise"] = 1
    with pytest.raises(ValidationError, match="tool_hops"):
        COMMAND.read(doc)


def test_external_input_keeps_refusing_unknown_fields() -> None:
    question = sample("question.v1")[0] | {"priority": "high"}
    with pytest.raises(ValidationError, match="priority"):
        QUESTION.read_json(json.dumps(question))
    with pytest.raises(ValidationError, match="temperature"):
        QuestionSettings.model_validate({"mode": "multi", "temperature": 0.2})


def test_a_v1_tool_call_s_kind_tag_is_upcast_away_not_logged_as_unknown() -> None:
    readers._noted.clear()  # pyright: ignore[reportPrivateUsage]
    doc = json.loads(json.dumps(sample("command.v1")[0]))
    doc["payload"]["state"]["messages"][2]["tool_calls"][0]["kind"] = "tool_call"
    with capture_logs() as logs:
        command = wire.decode_command(entry(doc))
    assert isinstance(command.payload, AgentTask)
    assert command.payload.state.messages[2].tool_calls[0].name == "calculator"
    assert [e for e in logs if e["event"] == "unknown field ignored"] == []
