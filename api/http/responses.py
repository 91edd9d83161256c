"""The error answers each route declares in the OpenAPI document, from the errors it raises.

Every error of the agentbus API has one body, ``agentbus_contracts.ErrorBody``; what
differs between routes is which statuses (and codes) they answer with. A route lists its
own errors (``errors(RunNotFound, NotOwner)``); the app adds those every route can answer
(``PUBLIC``, ``CALLER``). A client generated from the document then knows each status it
can meet, and the API fuzzer (``tests/fuzz``) fails on any status a route answers without
declaring it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from agentbus_contracts import ErrorBody
from api.app.errors import (
    AdminOnly,
    ApiError,
    BodyTooLarge,
    BudgetAboveTenant,
    ConversationBusy,
    ConversationNotFound,
    CriticalToolNotApproved,
    IdempotencyKeyReused,
    InvalidRequest,
    ModelNotAllowed,
    NotOwner,
    QuestionTooLarge,
    RateLimited,
    TenantQueueFull,
    TooManyActiveRuns,
    Unauthorized,
    Unavailable,
    WebhookRefused,
)
from api.http.error_kinds import status_of
from bus.json_values import is_array, is_object

#: An error a route answers with: an ``ApiError`` class, or ``(status, code)`` for one whose
#: status is chosen when it is raised (``GateProblem``).
ErrorCase = type[ApiError] | tuple[int, str]

#: What any route can answer: a malformed request, a body over the limit, Redis or the
#: store down.
PUBLIC: tuple[ErrorCase, ...] = (InvalidRequest, BodyTooLarge, Unavailable)
#: What any route that needs an API key can answer, besides ``PUBLIC``.
CALLER: tuple[ErrorCase, ...] = (*PUBLIC, Unauthorized)
#: What a route of admin keys only can answer, besides ``CALLER``.
ADMIN: tuple[ErrorCase, ...] = (AdminOnly,)
#: What deciding or reading a gate answers when it cannot (``GateProblem``: its code and
#: status come from the store's ``GateError`` or the decision's ``BadDecision``).
GATES: tuple[ErrorCase, ...] = (
    (404, "gate_not_found"),
    (403, "gate_forbidden"),
    (409, "gate_conflict"),
    (409, "gate_error"),
    (410, "gate_expired"),
    (422, "bad_decision"),
)
#: What starting a run can answer (``api.app.starter``; every entry point that asks).
STARTING: tuple[ErrorCase, ...] = (
    QuestionTooLarge,
    RateLimited,
    TooManyActiveRuns,
    TenantQueueFull,
    ConversationNotFound,
    NotOwner,
    CriticalToolNotApproved,
    ModelNotAllowed,
    IdempotencyKeyReused,
    ConversationBusy,
    BudgetAboveTenant,
    WebhookRefused,
)


def _status_code(case: ErrorCase) -> tuple[int, str]:
    if isinstance(case, tuple):
        return case
    return status_of(case), case.code


def error_statuses(cases: Iterable[ErrorCase]) -> dict[int, list[str]]:
    """Each status the cases answer with → its codes, sorted."""
    found: dict[int, set[str]] = {}
    for case in cases:
        status, code = _status_code(case)
        found.setdefault(status, set()).add(code)
    return {status: sorted(codes) for status, codes in sorted(found.items())}


def errors(
    *cases: ErrorCase, model: Any = ErrorBody, renumber: Mapping[int, int] | None = None
) -> dict[int | str, dict[str, Any]]:
    """FastAPI ``responses=`` for these errors: each status with ``model`` as its body and
    its codes in the description (``renumber``: statuses a dialect answers differently,
    as OpenAI's 400 for the API's 422)."""
    moved = renumber or {}
    pairs = [_status_code(c) for c in cases]
    found = error_statuses((moved.get(status, status), code) for status, code in pairs)
    return {
        status: {"model": model, "description": "Error codes: " + ", ".join(codes) + "."}
        for status, codes in found.items()
    }


def sse_errors(*cases: ErrorCase) -> dict[int | str, dict[str, Any]]:
    """``responses=`` for a route that answers its refusals as one server-sent event."""
    return {
        status: {
            "content": {"text/event-stream": {}},
            "description": "One error event; error codes: " + ", ".join(codes) + ".",
        }
        for status, codes in error_statuses(cases).items()
    }


def inline_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON Schema with its ``$defs`` written in place (for ``openapi_extra``
    of a route that reads its body itself)."""
    schema = model.model_json_schema()
    defs: dict[str, Any] = schema.pop("$defs", {})

    def resolve(node: object) -> object:
        if is_object(node):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return resolve(defs[ref.removeprefix("#/$defs/")])
            return {k: resolve(v) for k, v in node.items()}
        if is_array(node):
            return [resolve(v) for v in node]
        return node

    resolved = resolve(schema)
    assert is_object(resolved)
    return resolved
