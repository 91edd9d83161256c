"""The error body: every REST and SSE error is ``{"error": {"code", "message", "hint"}}``.

The code is part of the API and is never reworded; the message may be. A websocket sends
the same fields in a ``request_error`` frame.
"""

from __future__ import annotations

from pydantic import Field

from agentbus_contracts.base import View


class ErrorDetail(View):
    """What went wrong, in a stable code, and what to do about it."""

    code: str = Field(description="Stable, machine-readable (e.g. run_not_found).")
    message: str
    hint: str = Field(description="What the caller should do about it ('' when nothing).")
    field: str | None = Field(default=None, description="The request field at fault.")
    retry_after: int | None = Field(default=None, description="Seconds to wait before a retry.")


class ErrorBody(View):
    """The body of every error answer."""

    error: ErrorDetail
