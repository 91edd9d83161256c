"""The client's models agree with the server's OpenAPI document, route by route.

Each route's response schema in ``create_app(...).openapi()`` is compared with the JSON
Schema of the model the client (``agentbus_client``) parses that answer into: the same
fields, the same required ones, the same types. A route that answers with a model of its
own, or a client model that loses or gains a field, fails here.
"""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import BaseModel, TypeAdapter
from redis.asyncio import Redis

from agentbus_client import errors as client_errors
from agentbus_client import models
from agentbus_client.errors import error_from
from api.app.errors import ApiError
from api.app.run_view import describe
from api.compose.edge import make_use_cases
from api.compose.settings import AppSettings
from api.http.app import create_app
from api.http.error_kinds import status_of
from bus.events import RunStatus
from bus.store import RunRecord, open_store

#: (method, path, status) of each answer the client reads → the model it reads it into.
ANSWERS: dict[tuple[str, str, str], Any] = {
    ("post", "/api/v1/runs", "202"): models.Started,
    ("get", "/api/v1/runs", "200"): models.RunPage,
    ("get", "/api/v1/runs/{run_id}", "200"): models.Run,
    ("post", "/api/v1/runs/{run_id}/cancel", "202"): models.CancelRequested,
    ("get", "/api/v1/runs/{run_id}/deliveries", "200"): models.DeliveryList,
    ("get", "/api/v1/settings/webhook-secret", "200"): models.WebhookSecret,
    ("post", "/api/v1/settings/webhook-secret/rotate", "200"): models.WebhookSecret,
    ("post", "/api/v1/documents", "202"): models.Upload,
    ("get", "/api/v1/documents", "200"): list[models.Document],
    ("get", "/api/v1/documents/jobs/{job_id}", "200"): models.IngestJob,
    ("get", "/api/v1/conversations", "200"): models.ConversationList,
    ("get", "/api/v1/conversations/{conversation_id}", "200"): models.ConversationDetail,
    ("patch", "/api/v1/conversations/{conversation_id}", "200"): models.Conversation,
    ("get", "/api/v1/usage", "200"): models.UsageReport,
    ("get", "/api/v1/memories", "200"): models.MemoryList,
    ("patch", "/api/v1/memories/{memory_id}", "200"): models.Memory,
    ("post", "/api/v1/schedules", "201"): models.ScheduledQuestion,
    ("get", "/api/v1/schedules", "200"): models.ScheduledQuestionList,
    ("get", "/api/v1/schedules/{schedule_id}", "200"): models.ScheduledQuestionDetail,
    ("post", "/api/v1/schedules/{schedule_id}/pause", "200"): models.ScheduledQuestion,
    ("post", "/api/v1/schedules/{schedule_id}/resume", "200"): models.ScheduledQuestion,
}

#: Client models that are no route's whole answer: parts of one (checked with it), a
#: websocket frame, the error body (checked on every route) and the settings the client
#: keeps as plain documents (see agentbus_contracts/settings.py).
NOT_AN_ANSWER = {
    "ConversationSummary",
    "Delivery",
    "ErrorBody",
    "ErrorDetail",
    "Message",
    "ModelContext",
    "ScheduledTick",
    "Snapshot",
    "TenantSettings",
}


async def _document(data_dir: Path) -> dict[str, Any]:
    with pytest.MonkeyPatch.context() as env:
        env.setenv("AGENTBUS_DATA_DIR", str(data_dir))
        settings = AppSettings.load()
    redis = Redis()  # never connected: building the document reads nothing
    try:
        async with open_store(settings.bus) as stores:
            return create_app(make_use_cases(settings, redis, stores)).openapi()
    finally:
        await redis.aclose()


@pytest.fixture(scope="module")
def openapi(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The OpenAPI document of an app wired as ``agentbus api`` wires it (nothing served)."""
    return asyncio.run(_document(tmp_path_factory.mktemp("data")))


def shape(node: dict[str, Any], defs: dict[str, Any]) -> Any:
    """What a JSON Schema says about a value: its type, fields and required ones (titles,
    descriptions, defaults and references' names left out)."""
    if "$ref" in node:
        return shape(defs[node["$ref"].rsplit("/", 1)[1]], defs)
    if "anyOf" in node:
        return ("anyOf", sorted(repr(shape(n, defs)) for n in node["anyOf"]))
    if "enum" in node or "const" in node:
        return ("enum", sorted(node.get("enum", [node.get("const")])))
    kind = node.get("type")
    if kind == "array":
        return ("array", shape(node.get("items", {}), defs))
    if kind == "object" and "properties" in node:
        fields = {name: shape(sub, defs) for name, sub in node["properties"].items()}
        return ("object", fields, sorted(node.get("required", [])))
    if kind == "object":
        extra = node.get("additionalProperties", True)
        return ("map", shape(extra, defs) if isinstance(extra, dict) else extra)
    return (kind, node.get("format"))


def client_shape(model: Any) -> Any:
    """The shape of what the client parses, as its model declares it."""
    schema = TypeAdapter(model).json_schema(mode="serialization")
    return shape(schema, schema.get("$defs", {}))


def server_shape(doc: dict[str, Any], method: str, path: str, status: str) -> Any:
    """The shape the server's OpenAPI document gives one answer."""
    answers = doc["paths"][path][method]["responses"]
    assert status in answers, f"{method.upper()} {path} answers {sorted(answers)}, not {status}"
    schema = answers[status]["content"]["application/json"]["schema"]
    return shape(schema, doc["components"]["schemas"])


@pytest.mark.parametrize(("method", "path", "status"), list(ANSWERS))
def test_each_answer_the_client_reads_has_the_fields_and_types_the_openapi_gives(
    openapi: dict[str, Any], method: str, path: str, status: str
) -> None:
    server = server_shape(openapi, method, path, status)
    assert server == client_shape(ANSWERS[method, path, status])


def test_the_run_view_has_subject_and_cost_the_client_once_lacked(
    openapi: dict[str, Any],
) -> None:
    _, fields, required = server_shape(openapi, "get", "/api/v1/runs/{run_id}", "200")
    assert {"subject", "cost_usd", "usage", "trace"} <= set(fields)
    assert required == ["id", "status"]
    assert {"subject", "cost_usd"} <= set(models.Run.model_fields)


def test_every_api_route_documents_the_error_body_the_client_reads(
    openapi: dict[str, Any],
) -> None:
    error = client_shape(models.ErrorBody)
    _, (_, detail, required) = error[0], error[1]["error"]
    assert required == ["code", "hint", "message"] and {"field", "retry_after"} <= set(detail)
    operations = [
        (path, method, op)
        for path, ops in openapi["paths"].items()
        if path.startswith("/api/v1/")
        for method, op in ops.items()
        # AG-UI answers a refusal as its protocol does: one RUN_ERROR event.
        if "ag-ui" not in op.get("tags", [])
    ]
    assert len(operations) > 20
    for path, method, op in operations:
        answers = op["responses"]
        assert "default" not in answers, f"{method.upper()} {path}: name each status instead"
        failures = {s for s in answers if int(s) >= 400}
        assert {"401", "422", "503"} <= failures, f"{method.upper()} {path} answers {failures}"
        for status in failures:
            schema = answers[status]["content"]["application/json"]["schema"]
            assert shape(schema, openapi["components"]["schemas"]) == error, (method, path)


def test_each_route_declares_the_errors_it_raises_with_their_codes(
    openapi: dict[str, Any],
) -> None:
    def codes(method: str, path: str, status: str) -> str:
        return openapi["paths"][path][method]["responses"][status]["description"]

    assert "rate_limited" in codes("post", "/api/v1/runs", "429")
    assert "model_not_allowed" in codes("post", "/api/v1/runs", "403")
    assert "run_not_found" in codes("get", "/api/v1/runs/{run_id}", "404")
    assert "gate_expired" in codes("post", "/api/v1/runs/{run_id}/resume", "410")
    assert "admin_only" in codes("put", "/api/v1/settings", "403")
    assert "403" not in openapi["paths"]["/api/v1/settings"]["get"]["responses"]
    chat = openapi["paths"]["/v1/chat/completions"]["post"]
    # The OpenAI dialect answers its own error shape, and its 400 where the API says 422.
    assert "422" not in chat["responses"] and "invalid_request" in codes(
        "post", "/v1/chat/completions", "400"
    )
    body = chat["responses"]["400"]["content"]["application/json"]["schema"]
    assert shape(body, openapi["components"]["schemas"])[1]["error"][2] == ["message", "type"]
    assert "messages" in str(chat["requestBody"]["content"]["application/json"]["schema"])


def test_every_client_model_of_a_whole_answer_is_checked_against_a_route() -> None:
    checked = {(get_args(m) or (m,))[0].__name__ for m in ANSWERS.values()}
    declared = {
        name
        for name, value in vars(models).items()
        if inspect.isclass(value) and issubclass(value, BaseModel)
    }
    assert declared - NOT_AN_ANSWER - checked == set()


def test_a_stored_run_is_described_with_exactly_the_client_s_run_fields() -> None:
    record = RunRecord(
        id="r1",
        tenant_id="t1",
        subject="alice",
        status=RunStatus.DONE,
        mode="single",
        question="2+2?",
        answer="4",
        usage={"input_tokens": 10, "output_tokens": 2},
    )
    run = describe("r1", record)
    # REST answers and websocket snapshots both show this model, every field of it set.
    assert run.model_fields_set == set(models.Run.model_fields)
    assert (run.subject, run.finished, run.created_at) == ("alice", True, record.created_at)
    assert describe("r2", None).status == "queued"


def _api_errors() -> list[type[ApiError]]:
    found: list[type[ApiError]] = []
    pending: list[type[ApiError]] = [ApiError]
    while pending:
        kind = pending.pop()
        found.append(kind)
        pending.extend(kind.__subclasses__())
    return found


def test_the_client_turns_every_error_the_api_writes_into_its_typed_error() -> None:
    kinds = _api_errors()
    assert len(kinds) > 15  # the routes' own errors are loaded with the app
    for kind in kinds:
        body = kind("it broke", field="question", retry_after=3).body()
        detail = models.ErrorBody.model_validate(body).error
        raised = error_from(body["error"], status_of(kind))
        seen = (raised.code, raised.message, raised.hint, raised.field, raised.retry_after)
        assert seen == (kind.code, "it broke", kind.hint, "question", 3), kind
        assert raised.code == detail.code and isinstance(raised, client_errors.AgentbusError)
        if status_of(kind) == 404:
            assert isinstance(raised, client_errors.NotFound), kind
        if status_of(kind) == 429:
            assert isinstance(raised, client_errors.RateLimited), kind


def test_the_old_import_name_gives_the_client_s_own_objects() -> None:
    import agentbus_client
    import api.client

    assert set(api.client.MOVED_NAMES) == set(agentbus_client.__all__)
    for name in api.client.MOVED_NAMES:
        with pytest.warns(DeprecationWarning, match=f"api.client.{name} moved to agentbus_client"):
            assert getattr(api.client, name) is getattr(agentbus_client, name), name
