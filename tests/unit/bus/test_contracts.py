"""Message contracts: deterministic step ids, frozen models, exported schemas."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from pydantic import ValidationError

from bus import keys
from bus.commands import Command, NoopTask, Question
from bus.events import Answer, Done, StepRetry, parse_event
from bus.schema import export
from bus.transcript import fold
from tests.support import noop_command


def test_step_id_is_deterministic_and_follow_moves_one_step() -> None:
    cmd = noop_command()
    assert cmd.step_id == f"{cmd.run_id}:0:0"
    nxt = cmd.follow(keys.Role.NOOP, NoopTask(hops_left=0), attempt=1, branch="docs")
    assert nxt.step_id == f"{cmd.run_id}:1:1:docs"
    assert nxt.follow(keys.Role.NOOP, NoopTask(hops_left=0)).step_id == f"{cmd.run_id}:2:1"
    assert (nxt.run_id, nxt.tenant_id, nxt.deadline) == (cmd.run_id, cmd.tenant_id, cmd.deadline)


def test_messages_are_frozen_and_reject_unknown_fields() -> None:
    cmd = noop_command()
    with pytest.raises(ValidationError):
        cmd.step = 3  # type: ignore[misc]
    doc = json.loads(cmd.model_dump_json())
    doc["surprise"] = 1
    with pytest.raises(ValidationError, match="surprise"):
        Command.model_validate(doc)


@pytest.mark.parametrize("run_id", ["", "a" * 65, "../etc", "run id", "r\n1"])
def test_bad_run_ids_are_refused(run_id: str) -> None:
    doc = json.loads(noop_command().model_dump_json())
    doc["run_id"] = run_id
    with pytest.raises(ValidationError, match="run_id"):
        Command.model_validate(doc)


def test_schema_export_writes_valid_schemas_that_accept_real_messages(tmp_path: Path) -> None:
    files = {p.name: p for p in export(tmp_path)}
    assert {"command.schema.json", "question.schema.json", "event.done.schema.json"} <= set(files)
    for path in files.values():
        jsonschema.Draft202012Validator.check_schema(json.loads(path.read_text()))
    command_schema = json.loads(files["command.schema.json"].read_text())
    jsonschema.validate(json.loads(noop_command().model_dump_json()), command_schema)
    question_schema = json.loads(files["question.schema.json"].read_text())
    jsonschema.validate({"api_key": "ak_12345678", "question": "2+2?"}, question_schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"api_key": "ak_12345678", "question": ""}, question_schema)
    # A field left out takes the tenant's setting; an unknown one is refused, never dropped.
    assert Question(api_key="ak_12345678", question="hi").settings.mode is None
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(
            {"api_key": "ak_12345678", "question": "q", "settings": {"x": 1}}, question_schema
        )
    signed = {"key_id": "0123456789ab", "signed_at": 1_700_000_000, "question": "2+2?"}
    jsonschema.validate(signed, question_schema)
    Question.model_validate(signed)
    for bad in ({"question": "q"}, {**signed, "api_key": "ak_12345678"}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, question_schema)
        with pytest.raises(ValidationError, match="api_key or key_id"):
            Question.model_validate(bad)
    with pytest.raises(ValidationError, match="go together"):
        Question.model_validate({"key_id": "0123456789ab", "question": "q"})


def test_events_roundtrip_and_transcript_drops_a_retried_steps_tokens() -> None:
    events = [
        Answer(run_id="r", step_id="r:1:0", delta="partial "),
        StepRetry(run_id="r", step_id="r:1:0", delivery=2),
        Answer(run_id="r", step_id="r:1:0", delta="whole "),
        Answer(run_id="r", step_id="r:2:0", delta="answer"),
        Done(run_id="r", status="done"),
    ]
    parsed = [parse_event(e.model_dump_json()) for e in events]
    assert parsed == events
    transcript = fold(parsed)
    assert (transcript.answer, transcript.status, transcript.retries) == ("whole answer", "done", 1)


def test_shards_share_one_hash_tag_per_run() -> None:
    run_id = "abc123"
    shard = keys.shard_of(run_id, 8)
    tagged = [
        keys.role_stream(keys.Role.PLANNER, shard),
        keys.run_events(run_id, shard),
        keys.run_steps(run_id, shard),
    ]
    assert all(keys.tag(shard) in k for k in tagged)
    assert keys.shard_of(run_id, 8) == shard  # stable
    assert keys.shard_of(run_id, 1) == 0
