"""The wire models as the client reads them: events, runs, errors (no server needed)."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from agentbus_client.errors import NotFound, RateLimited, error_from
from agentbus_contracts import (
    Delivery,
    ErrorBody,
    Run,
    RunPage,
    Snapshot,
    Started,
    parse_event,
)
from agentbus_contracts.events import Answer, Done, ToolResult


def test_events_decode_into_their_typed_models() -> None:
    answer = parse_event(json.dumps({"type": "answer", "run_id": "r1", "delta": "4", "ts": 1.0}))
    done = parse_event(
        json.dumps({"type": "done", "run_id": "r1", "status": "done", "cost_usd": 0.002})
    )

    assert isinstance(answer, Answer) and answer.delta == "4" and answer.attempt == 0
    assert isinstance(done, Done) and done.cost_usd == 0.002 and done.schema_version == 1


def test_an_event_round_trips_through_its_json() -> None:
    result = ToolResult(run_id="r1", call_id="c1", tool="calc", status="ok", code="ok", result=437)
    assert parse_event(result.model_dump_json()) == result


def test_an_event_of_an_unknown_type_is_refused_but_an_unknown_field_is_ignored() -> None:
    with pytest.raises(ValidationError):
        parse_event(json.dumps({"type": "telepathy", "run_id": "r1"}))
    with pytest.raises(ValidationError, match="delta"):  # a wrong field still fails
        parse_event(json.dumps({"type": "answer", "run_id": "r1", "delta": 3, "surprise": 1}))
    # A field a newer server added: the client keeps what it knows.
    event = parse_event(json.dumps({"type": "answer", "run_id": "r1", "delta": "4", "surprise": 1}))
    assert isinstance(event, Answer) and event.delta == "4"


def test_a_run_from_a_newer_server_keeps_what_the_client_knows() -> None:
    run = Run.model_validate(
        {
            "id": "r1",
            "subject": "alice",
            "status": "done",
            "answer": "437",
            "created_at": "2026-12-01T20:00:00.123456+00:00",
            "cost_usd": 0.0031,
            "a_field_from_the_future": [1, 2],
        }
    )

    assert (run.subject, run.cost_usd, run.finished) == ("alice", 0.0031, True)
    assert run.created_at == datetime(2026, 12, 1, 20, 0, 0, 123456, tzinfo=UTC)
    assert not hasattr(run, "a_field_from_the_future")


def test_a_run_s_times_are_written_back_as_they_came() -> None:
    doc = {"id": "r1", "status": "running", "created_at": "2026-12-01T20:00:00+00:00"}
    assert json.loads(Run.model_validate(doc).model_dump_json())["created_at"] == doc["created_at"]


@pytest.mark.parametrize(
    ("status", "finished"),
    [("queued", False), ("suspended", False), ("cancelled", True), ("timeout", True)],
)
def test_a_run_is_finished_only_in_a_final_status(status: str, finished: bool) -> None:
    assert Run(id="r1", status=status).finished is finished


def test_a_page_a_start_a_snapshot_and_a_delivery_decode() -> None:
    page = RunPage.model_validate({"runs": [{"id": "r2", "status": "done"}], "next_before": None})
    started = Started.model_validate(
        {"run_id": "r3", "conversation_id": "c1", "events_url": "/e", "replayed": True}
    )
    snapshot = Snapshot.model_validate(
        {"type": "snapshot", "run_id": "r2", "last_event_id": "5-0", "run": page.runs[0]}
    )
    delivery = Delivery.model_validate(
        {
            "id": "msg_1",
            "type": "run.done",
            "url": "https://hooks.example/x",
            "status": "delivered",
            "attempts": 1,
            "created_at": "2026-12-01T20:00:00Z",
        }
    )

    assert started.status == "queued" and started.replayed
    assert snapshot.run.finished and delivery.created_at.tzinfo is not None


def test_an_error_body_becomes_the_typed_error_of_its_status() -> None:
    body = {"error": {"code": "rate_limited", "message": "slow down", "hint": "wait"}}
    doc = ErrorBody.model_validate(body).model_dump(exclude_none=True)["error"]
    limited = error_from({**doc, "retry_after": 7}, 429)
    missing = error_from({"code": "run_not_found", "message": "no run", "hint": ""})

    assert isinstance(limited, RateLimited) and limited.retry_after == 7
    assert isinstance(missing, NotFound) and missing.status == 404


def _loaded_after(code: str, watched: tuple[str, ...]) -> list[str]:
    """Which of ``watched`` top-level modules a fresh interpreter holds after ``code``."""
    probe = f"import json, sys; {code}; print(json.dumps(sorted({{*sys.modules}})))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded = {name.split(".")[0] for name in json.loads(out.stdout)}
    return sorted(loaded & set(watched))


def test_the_models_load_without_httpx_or_websockets() -> None:
    code = "import agentbus_client.models, agentbus_client.models.events"
    assert _loaded_after(code, ("httpx", "websockets")) == []


def test_the_whole_client_loads_no_module_of_the_server() -> None:
    # Meaningful where the server is installed too (the workspace): it is not imported.
    code = "from agentbus_client import AgentbusClient, AsyncAgentbusClient, EventStream"
    server = ("fastapi", "starlette", "sqlalchemy", "qdrant_client", "onnxruntime", "redis")
    ours = ("bus", "api", "agents", "gateway", "retrieval")
    assert _loaded_after(code, server + ours) == []
    assert _loaded_after(code, ("httpx", "websockets")) == ["httpx", "websockets"]


def test_the_package_s_public_names_load_on_first_use() -> None:
    import agentbus_client

    assert agentbus_client.AgentbusClient.__name__ == "AgentbusClient"
    assert agentbus_client.Run is Run
    assert set(agentbus_client.__all__) <= set(dir(agentbus_client))
    with pytest.raises(AttributeError):
        _ = agentbus_client.NoSuchThing  # type: ignore[attr-defined]
