"""Export every message type's JSON Schema, one file each (``agentbus schema export``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel, TypeAdapter

from bus import commands, events
from bus.runtime.deadletter import DeadLetter


def message_types() -> dict[str, type[BaseModel] | TypeAdapter[Any]]:
    """Every exported message type, by file stem."""
    found: dict[str, type[BaseModel] | TypeAdapter[Any]] = {
        "command": commands.Command,
        "question": commands.Question,
        "run_result": commands.RunResult,
        "dead_letter": DeadLetter,
        "client_event": events.CLIENT_EVENT,
    }
    for payload in get_args(commands.AnyPayload):
        found[f"payload.{payload.model_fields['kind'].default}"] = payload
    union = get_args(events.ClientEvent)[0]
    for event_type in get_args(union):
        found[f"event.{event_type.model_fields['type'].default}"] = event_type
    return found


def schema_of(kind: type[BaseModel] | TypeAdapter[Any]) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one message type."""
    schema = kind.json_schema() if isinstance(kind, TypeAdapter) else kind.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


def export(directory: Path) -> list[Path]:
    """Write ``<name>.schema.json`` for every message type; returns the files written."""
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name, kind in sorted(message_types().items()):
        path = directory / f"{name}.schema.json"
        path.write_text(json.dumps(schema_of(kind), indent=2, sort_keys=True) + "\n")
        written.append(path)
    return written
