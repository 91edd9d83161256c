"""Typed errors of the client: one per kind of answer the API gives, all under one root.

Every error keeps the API's stable ``code`` (e.g. ``run_not_found``, ``gate_conflict``), its
message and hint, the HTTP status when there was one, and ``retry_after`` for 429s.
"""

from __future__ import annotations

from typing import Any


class AgentbusError(Exception):
    """Root of every error the client raises.

    Attributes:
        code: the API's stable error code (``connection_failed`` when it was not reached).
        message: what went wrong.
        hint: what to do about it.
        status: the HTTP status, when the API answered over HTTP.
        field: the request field at fault, when there is one.
        retry_after: seconds to wait before retrying, when that is the remedy.
    """

    def __init__(
        self,
        message: str,
        *,
        code: str = "error",
        hint: str = "",
        status: int | None = None,
        field: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"[{code}] {message}" + (f" ({hint})" if hint else ""))
        self.code = code
        self.message = message
        self.hint = hint
        self.status = status
        self.field = field
        self.retry_after = retry_after


class Unauthorized(AgentbusError):
    """The API key is missing, unknown or revoked (401)."""


class Forbidden(AgentbusError):
    """The key is valid but may not do this (403: admin only, another user's gate)."""


class NotFound(AgentbusError):
    """No such run, conversation or key for this tenant (404)."""


class Conflict(AgentbusError):
    """The request conflicts with the current state (409: run ended, gate decided)."""


class Gone(AgentbusError):
    """The thing existed but expired (410: an expired gate)."""


class InvalidRequest(AgentbusError):
    """A field is invalid (422), e.g. a refused ``webhook_url``."""


class TooLarge(AgentbusError):
    """The question or body is over the deployment's limit (413)."""


class RateLimited(AgentbusError):
    """A tenant limit said no (429) and retries did not get past it; see ``retry_after``."""


class Unavailable(AgentbusError):
    """The API, Redis or the state store is down (5xx)."""


class ConnectionFailed(AgentbusError):
    """The API could not be reached (or the connection kept dropping) after retries."""


_BY_STATUS: dict[int, type[AgentbusError]] = {
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    413: TooLarge,
    422: InvalidRequest,
    400: InvalidRequest,
    429: RateLimited,
}
_BY_CODE: dict[str, int] = {
    "unauthorized": 401,
    "admin_only": 403,
    "gate_forbidden": 403,
    "not_owner": 403,
    "critical_tool_not_approved": 403,
    "run_ended": 409,
    "idempotency_key_reused": 409,
    "gate_conflict": 409,
    "gate_expired": 410,
    "question_too_large": 413,
    "body_too_large": 413,
    "rate_limited": 429,
    "too_many_active_runs": 429,
    "unavailable": 503,
}


def error_from(doc: dict[str, Any], status: int | None = None) -> AgentbusError:
    """The typed error for an API error document (``{"code", "message", "hint", ...}``)."""
    code = str(doc.get("code") or "error")
    if status is None:
        status = _BY_CODE.get(code, 404 if code.endswith("not_found") else 422)
    kind = _BY_STATUS.get(status, Unavailable if status >= 500 else AgentbusError)
    retry = doc.get("retry_after")
    return kind(
        str(doc.get("message") or code),
        code=code,
        hint=str(doc.get("hint") or ""),
        status=status,
        field=doc.get("field"),
        retry_after=float(retry) if retry is not None else None,
    )
