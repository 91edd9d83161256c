"""Errors the API answers with: one root class, a stable code, a kind and a hint.

Every error reaches the client as ``{"error": {"code", "message", "hint"}}`` (REST, SSE)
or as a ``request_error`` frame (websocket); the code is part of the API and is never
reworded, the message may be. The body's model is ``agentbus_contracts.ErrorBody``,
the one the client reads. The kind says what went wrong in the caller's terms; each
transport answers a kind its own way (HTTP's statuses and headers: `api.http.error_kinds`).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from agentbus_contracts import ErrorBody, ErrorDetail
from bus.errors import StoreError

#: What a use case lets through when the state store fails under it: a transport answers
#: these as `Unavailable` (and Redis's own failure, ``redis.RedisError``, which it catches
#: itself), so it need not know the store's errors.
BACKEND_FAILURES: tuple[type[Exception], ...] = (StoreError,)


class Kind(StrEnum):
    """What kind of failure an error is, whatever the transport that answers it."""

    MALFORMED = "malformed"  # the request cannot be taken as it is (a name already taken)
    UNAUTHENTICATED = "unauthenticated"  # no valid credential
    EXPIRED = "expired"  # a credential that was valid is no more (a signature's window)
    FORBIDDEN = "forbidden"  # the caller is known and may not do this
    NOT_FOUND = "not_found"  # nothing the caller may see has this name
    CONFLICT = "conflict"  # the state of what it names does not allow it now
    GONE = "gone"  # it was there and will not be again
    TOO_LARGE = "too_large"  # the request is bigger than allowed
    WRONG_HOST = "wrong_host"  # the request reached this server under a name it does not answer
    INVALID = "invalid"  # a field's value is refused
    THROTTLED = "throttled"  # too much, too soon: retry later
    INTERNAL = "internal"  # the server failed
    UNAVAILABLE = "unavailable"  # a service the server needs does not answer


class ApiError(Exception):
    """Root of every error the API answers with.

    Attributes:
        code: stable, machine-readable code.
        kind: what kind of failure it is (a transport maps it: an HTTP status).
        hint: what the caller should do about it.
        retry_after: seconds to wait before retrying, when that is the remedy.
        field: the request field at fault, when there is one.
    """

    code = "api_error"
    kind: Kind = Kind.INTERNAL
    hint = ""

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        retry_after: int | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if hint is not None:
            self.hint = hint
        self.retry_after = retry_after
        self.field = field

    def body(self) -> dict[str, Any]:
        """The JSON error document (``field`` and ``retry_after`` only when they are set)."""
        detail = ErrorDetail(
            code=self.code,
            message=self.message,
            hint=self.hint,
            field=self.field,
            retry_after=self.retry_after,
        )
        return ErrorBody(error=detail).model_dump(mode="json", exclude_none=True)


class Unauthorized(ApiError):
    """No key, a malformed key, an unknown key or a revoked one: all look the same."""

    code = "unauthorized"
    kind = Kind.UNAUTHENTICATED
    hint = "send 'Authorization: Bearer <api key>'; create a key with `agentbus keys create`"


class AdminOnly(ApiError):
    """The caller's key is valid but not an admin key of its tenant."""

    code = "admin_only"
    kind = Kind.FORBIDDEN
    hint = "use an admin key of your tenant (`agentbus keys create --role admin`)"


class NotOwner(ApiError):
    """The caller may read this (a tenant admin) but only its owner may change it."""

    code = "not_owner"
    kind = Kind.FORBIDDEN
    hint = "only the user who started it may continue, cancel, resume or delete it"


class NotFound(ApiError):
    """No such thing for this caller (also when another user or tenant owns the id)."""

    code = "not_found"
    kind = Kind.NOT_FOUND
    hint = "check the id; ids of other users and tenants are never visible"


class RunNotFound(NotFound):
    """No run with this id for the caller (it may be another user's or tenant's)."""

    code = "run_not_found"
    hint = "check the run id; list your runs with GET /api/v1/runs"


class ConversationNotFound(NotFound):
    """No conversation with this id for the caller (it may be another user's or tenant's)."""

    code = "conversation_not_found"
    hint = "check the id; list yours with GET /api/v1/conversations"


class KeyNotFound(NotFound):
    """No API key with this id in the caller's tenant."""

    code = "key_not_found"
    hint = "list your tenant's keys with GET /api/v1/keys"


class ScheduleNotFound(NotFound):
    """No schedule with this id for the caller (it may be another user's or tenant's)."""

    code = "schedule_not_found"
    hint = "check the id; list yours with GET /api/v1/schedules"


class MemoryNotFound(NotFound):
    """No memory with this id for the caller (it may be another user's or tenant's)."""

    code = "memory_not_found"
    hint = "check the id; list yours with GET /api/v1/memories"


class RunEnded(ApiError):
    """The run already ended, so it cannot be cancelled."""

    code = "run_ended"
    kind = Kind.CONFLICT
    hint = "read its outcome with GET /api/v1/runs/{run_id}"


class ErasureIncomplete(ApiError):
    """Steps of the user being erased were still running when the erasure stopped waiting.

    Their keys are revoked and nothing of theirs commits any more (the fence), but nothing
    was deleted yet.
    """

    code = "erasure_incomplete"
    kind = Kind.CONFLICT
    hint = "erase again shortly: it carries on from where it stopped"


class UserErased(ApiError):
    """The user id was erased lately: a key for it would have its steps refused."""

    code = "user_erased"
    kind = Kind.CONFLICT
    hint = "use another user id, or wait until AGENTBUS_ERASURE_FENCE_S has passed"


class ConversationBusy(ApiError):
    """The conversation has a run in flight and the question's ``multitask`` is ``reject``."""

    code = "conversation_busy"
    kind = Kind.CONFLICT
    hint = "wait for the running answer to finish, or ask with multitask enqueue or interrupt"


class IdempotencyKeyReused(ApiError):
    """An Idempotency-Key was sent again with a different request."""

    code = "idempotency_key_reused"
    kind = Kind.CONFLICT
    hint = "use a new Idempotency-Key for a different request"


class InvalidRequest(ApiError):
    """The request is malformed or a field is invalid."""

    code = "invalid_request"
    kind = Kind.INVALID
    hint = "fix the named field; the schema is at /docs"


class ToolNameTaken(ApiError):
    """A tool the client declared has the name of one of the gateway's own tools."""

    code = "tool_name_taken"
    kind = Kind.MALFORMED
    hint = "rename the client's tool: a client's tool never stands in for the server's"


class QuestionTooLarge(ApiError):
    """The question is longer than the deployment accepts."""

    code = "question_too_large"
    kind = Kind.TOO_LARGE
    hint = "shorten the question, or attach long text as a document instead"


class BodyTooLarge(ApiError):
    """The request body is larger than any valid request."""

    code = "body_too_large"
    kind = Kind.TOO_LARGE
    hint = "send a smaller body"


class RateLimited(ApiError):
    """The tenant started runs faster than its rate allows."""

    code = "rate_limited"
    kind = Kind.THROTTLED
    hint = "wait Retry-After seconds, then retry"


class TooManyActiveRuns(ApiError):
    """The tenant has as many runs in flight as its quota allows."""

    code = "too_many_active_runs"
    kind = Kind.THROTTLED
    hint = "wait for a run to finish (or cancel one), then retry"


class TenantQueueFull(ApiError):
    """The tenant has as many runs waiting for admission as a shard holds (fair share)."""

    code = "tenant_queue_full"
    kind = Kind.THROTTLED
    hint = "wait Retry-After seconds, then retry; the tenant's earlier runs go first"


class Unavailable(ApiError):
    """Redis or the store cannot be reached."""

    code = "unavailable"
    kind = Kind.UNAVAILABLE
    hint = "retry shortly; if it persists, check Redis and the state store (/readyz)"


class SearchUnavailable(ApiError):
    """No retrieval worker answered a document search in time, or its search failed."""

    code = "search_unavailable"
    kind = Kind.UNAVAILABLE
    hint = "retry shortly; if it persists, check that a retrieval worker runs (agentbus streams)"


class CriticalToolNotApproved(ApiError):
    """A run asked for a CRITICAL tool that its tenant's admin has not approved."""

    code = "critical_tool_not_approved"
    kind = Kind.FORBIDDEN
    hint = (
        "ask a tenant admin to add the tool to approved_critical_tools "
        "(PUT /api/v1/settings), or ask without it"
    )


class BudgetAboveTenant(ApiError):
    """A question asked for a bigger budget than its tenant allows one run."""

    code = "budget_above_tenant"
    kind = Kind.INVALID
    hint = "ask for at most the tenant's token_budget / cost_budget_usd (GET /api/v1/settings)"


class ModelNotAllowed(ApiError):
    """A model the deployment does not serve (``AGENTBUS_LLM_MODELS``)."""

    code = "model_not_allowed"
    kind = Kind.FORBIDDEN
    hint = "choose one of GET /api/v1/models"


class SignatureExpired(ApiError):
    """A signed question's ``signed_at`` is outside the accepted window."""

    code = "signature_expired"
    kind = Kind.EXPIRED
    hint = "sign each question when you send it (signed_at: Unix seconds, a synced clock)"


class SignatureReplayed(ApiError):
    """A signed question's signature was already used by another entry."""

    code = "signature_replayed"
    kind = Kind.CONFLICT
    hint = "sign every question afresh; a signed entry is admitted once"


class WebhookRefused(ApiError):
    """The webhook URL is not one this tenant may send to."""

    code = "webhook_refused"
    kind = Kind.INVALID
    hint = (
        "use a public http(s) URL whose host is on the tenant's egress allowlist "
        "(egress_enabled, egress_hosts in /api/v1/settings)"
    )


class HostNotAllowed(ApiError):
    """``/mcp`` was reached under a Host name it does not answer (a DNS-rebinding guard)."""

    code = "host_not_allowed"
    kind = Kind.WRONG_HOST
    hint = "reach the API under a name in AGENTBUS_MCP_ALLOWED_HOSTS, or add this one there"


class OriginNotAllowed(ApiError):
    """A browser page of another origin called ``/mcp`` (a DNS-rebinding guard)."""

    code = "origin_not_allowed"
    kind = Kind.FORBIDDEN
    hint = (
        "call from a page of an allowed host (AGENTBUS_MCP_ALLOWED_HOSTS) or origin "
        "(AGENTBUS_API_ALLOWED_ORIGINS)"
    )


class TeamNotFound(NotFound):
    """No team of this name in the caller's tenant (or it was deleted)."""

    code = "team_not_found"
    hint = "list your tenant's teams with GET /api/v1/teams"


class TeamRefused(InvalidRequest):
    """A team document that cannot run: every fault, each at its place in the document."""

    code = "team_invalid"
    hint = "fix each fault at the place its JSON pointer names, then apply the team again"

    def __init__(
        self,
        message: str,
        *,
        faults: Sequence[dict[str, str]] = (),
        hint: str | None = None,
        retry_after: int | None = None,
        field: str | None = "team",
    ) -> None:
        super().__init__(message, hint=hint, retry_after=retry_after, field=field)
        self.faults = list(faults)

    def body(self) -> dict[str, Any]:
        """The error document, with ``error.faults``: ``{pointer, code, message}`` each."""
        body = super().body()
        body["error"]["faults"] = self.faults
        return body


class TeamNotRunnable(TeamRefused):
    """A stored team that a run cannot follow yet (a built-in node the ``agent`` role cannot
    hand a run back from): each place, as a fault."""

    code = "team_not_runnable"
    hint = "use declared agents, the gateway, the finalizer and memory; see docs/teams.md"
