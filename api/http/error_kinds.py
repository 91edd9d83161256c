"""How HTTP answers each kind of application error (`api.app.errors.Kind`): one table.

The status of every kind, and the headers some kinds add; an error that says when to
retry (``retry_after``) adds ``Retry-After``.
"""

from __future__ import annotations

from api.app.errors import ApiError, Kind

#: The status each kind is answered with.
STATUS: dict[Kind, int] = {
    Kind.MALFORMED: 400,
    Kind.UNAUTHENTICATED: 401,
    Kind.EXPIRED: 401,
    Kind.FORBIDDEN: 403,
    Kind.NOT_FOUND: 404,
    Kind.CONFLICT: 409,
    Kind.GONE: 410,
    Kind.TOO_LARGE: 413,
    Kind.WRONG_HOST: 421,
    Kind.INVALID: 422,
    Kind.THROTTLED: 429,
    Kind.INTERNAL: 500,
    Kind.UNAVAILABLE: 503,
}

#: Headers a kind's answer carries, in place of ``Retry-After``.
HEADERS: dict[Kind, dict[str, str]] = {
    Kind.UNAUTHENTICATED: {"WWW-Authenticate": 'Bearer realm="agentbus"'},
}


def status_of(error: ApiError | type[ApiError]) -> int:
    """The HTTP status of an error (or of an error class)."""
    return STATUS[error.kind]


def headers_of(error: ApiError) -> dict[str, str]:
    """The response headers an error adds (``WWW-Authenticate``, ``Retry-After``)."""
    fixed = HEADERS.get(error.kind)
    if fixed is not None:
        return dict(fixed)
    return {"Retry-After": str(error.retry_after)} if error.retry_after is not None else {}
