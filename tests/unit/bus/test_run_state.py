"""The run state's typed parts: they round-trip on the wire, and a wrong field fails at decode."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from bus import keys, wire
from bus.commands import AgentTask, Command, deadline_in
from bus.errors import MessageInvalid
from bus.run_state import (
    ChatMessage,
    EvidenceItem,
    JudgeChange,
    JudgeProgress,
    Review,
    RunSettings,
    RunState,
    RunStateChange,
    ToolCall,
)
from bus.schema import export
from tests.support import narrow


def multi_mode_state() -> RunState:
    """A multi-mode state after a tool call, a critique and a fact-check."""
    call = ToolCall(id="s4c0", name="calculator", arguments={"expression": "23*19"})
    evidence = [
        EvidenceItem(ref=1, source_kind="documents", id="d1", source="a.md", text="23*19=437"),
        EvidenceItem(ref=2, source_kind="web", source="https://example.com", title="Ex"),
    ]
    return RunState(
        question="What is 23 × 19?",
        settings=RunSettings(mode="multi", accuracy="accurate", sources=["documents", "web"]),
        plan=["Multiply."],
        messages=[
            ChatMessage.system("You are a careful assistant."),
            ChatMessage.user("What is 23 × 19?"),
            ChatMessage.assistant("", [call]),
            ChatMessage.tool(call, '{"status": "ok", "code": "ok", "result": 437}'),
            ChatMessage.assistant("437 [1]"),
        ],
        tool_hops=1,
        draft="437 [1]",
        critiques=[Review(agent="critic", verdict="REVISE", reason="show the working")],
        verdicts=[Review(agent="verifier", verdict="pass", reason="matches")],
        base_len=2,
        evidence=evidence,
        judge=JudgeProgress(
            phase="done",
            messages=[ChatMessage.user("check it"), ChatMessage.assistant("confirmed")],
            hops=1,
            findings="The calculator confirms 437.",
            recheck=evidence[:1],
        ),
    )


def command(state: RunState) -> Command:
    return Command(
        run_id="run-1",
        tenant_id="t1",
        subject="alice",
        role=keys.Role.VERIFIER,
        deadline=deadline_in(60),
        payload=AgentTask(state=state),
    )


def test_a_multi_mode_state_round_trips_on_the_wire() -> None:
    sent = command(multi_mode_state())
    received = wire.decode_command({b"data": wire.encode(sent).encode()})
    assert received == sent
    state = narrow(AgentTask, received.payload).state
    assert isinstance(state.messages[2].tool_calls[0], ToolCall)
    assert state.judge.recheck[0].source_kind == "documents"
    assert state.critiques[0].reason == "show the working"


def _doc() -> dict[str, Any]:
    return json.loads(wire.encode(command(multi_mode_state())))


def _set(doc: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    target: Any = doc["payload"]["state"]
    for part in parents:
        target = target[int(part)] if part.isdigit() else target[part]
    if value is _DELETE:
        del target[last]
    else:
        target[last] = value


_DELETE = object()


@pytest.mark.parametrize(
    ("path", "value", "where"),
    [
        ("messages.1.role", "robot", "messages.1.role"),
        ("messages.3.tool_call_id", None, "messages.3"),  # a tool message names its call
        ("messages.1.tool_calls", [{"id": "x", "name": "calculator"}], "messages.1"),
        ("messages.2.tool_calls.0.arguments", "23*19", "messages.2.tool_calls.0.arguments"),
        ("critiques.0.verdict", "MAYBE", "critiques.0.verdict"),
        ("evidence.0.ref", _DELETE, "evidence.0.ref"),
        ("evidence.1.ref", 0, "evidence.1.ref"),
        ("judge.phase", "thinking", "judge.phase"),
    ],
)
def test_a_wrong_field_fails_when_the_command_is_decoded(path: str, value: Any, where: str) -> None:
    doc = _doc()
    _set(doc, path, value)
    with pytest.raises(MessageInvalid, match=f"payload.agent_task.state.{where}"):
        wire.decode_command({b"data": json.dumps(doc).encode()})


def test_a_command_of_a_newer_version_than_the_reader_is_refused_naming_both() -> None:
    doc = _doc()
    doc["schema_version"] = 3
    with pytest.raises(MessageInvalid, match="command version 3 is newer than this reader's 2"):
        wire.decode_command({b"data": json.dumps(doc).encode()})


def test_the_exported_command_schema_describes_the_typed_state(tmp_path: Path) -> None:
    files = {p.name: p for p in export(tmp_path)}
    schema = json.loads(files["command.schema.json"].read_text())
    assert {"ChatMessage", "ToolCall", "Review", "EvidenceItem", "JudgeProgress"} <= set(
        schema["$defs"]
    )
    doc = _doc()
    jsonschema.validate(doc, schema)
    _set(doc, "critiques.0.verdict", "MAYBE")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, schema)


def test_every_field_a_step_may_change_is_in_the_typed_change() -> None:
    # What a step may not change is what the edge fixed when it published the run.
    fixed = {"question", "conversation_id", "settings", "started_at"}
    assert set(RunStateChange.__annotations__) == set(RunState.model_fields) - fixed
    assert set(JudgeChange.__annotations__) == set(JudgeProgress.model_fields)


def test_evolve_changes_only_what_it_names_and_leaves_the_original() -> None:
    state = RunState(question="q", messages=[ChatMessage.user("q")], tool_hops=2)
    moved = state.evolve(tool_hops=3, draft="d").with_judge(phase="tools", hops=1)
    assert (moved.tool_hops, moved.draft, moved.messages) == (3, "d", state.messages)
    assert (moved.judge.phase, moved.judge.hops) == ("tools", 1)
    assert (state.tool_hops, state.draft, state.judge.phase) == (2, None, None)
