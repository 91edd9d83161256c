"""The one typed result every tool call ends in, and its audit record."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gateway.errors import GatewayError

#: Codes that go with ``status == ok``; every other code is a failure or refusal.
OK_CODES = frozenset({"ok", "output_truncated"})


class OutcomeStatus(StrEnum):
    """How a call ended, from the model's point of view."""

    OK = "ok"
    ERROR = "error"
    REFUSED = "refused"
    EGRESS_BLOCKED = "egress_blocked"
    CLIENT_PENDING = "client_pending"


class ToolOutcome(BaseModel):
    """The result of one tool call, as the model (and the audit log) sees it.

    Attributes:
        status: ``ok``, ``error``, ``refused`` or ``egress_blocked``.
        code: a stable machine-readable code (``ok``, ``schema_invalid``, ``ssrf_blocked``...).
        message: one or two sentences the model can act on; never a traceback.
        result: the tool's output, only when ``status`` is ``ok``.
        truncated: the output was cut to the tool's size limit.
        blocked_host: the host that needs approval, only when ``status`` is ``egress_blocked``.
        duration_ms: wall time spent in the gateway for this call.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    status: OutcomeStatus
    code: str = Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")
    message: str = ""
    result: Any = None
    truncated: bool = False
    blocked_host: str | None = None
    duration_ms: float = Field(default=0.0, ge=0)

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        # A status/code/payload mismatch is a gateway bug; catch it where it is made.
        is_ok = self.status is OutcomeStatus.OK
        if is_ok != (self.code in OK_CODES):
            raise ValueError(f"code {self.code!r} does not go with status {self.status.value!r}")
        if not is_ok and self.result is not None:
            raise ValueError("only an ok outcome carries a result")
        if (self.status is OutcomeStatus.EGRESS_BLOCKED) != (self.blocked_host is not None):
            raise ValueError("blocked_host is set exactly when status is egress_blocked")
        return self

    @classmethod
    def success(cls, result: Any, *, truncated: bool = False) -> ToolOutcome:
        """An ``ok`` outcome; a truncated one carries code ``output_truncated``."""
        if truncated:
            return cls(
                status=OutcomeStatus.OK,
                code="output_truncated",
                message="The output was longer than this tool's limit and was cut.",
                result=result,
                truncated=True,
            )
        return cls(status=OutcomeStatus.OK, code="ok", result=result)

    @classmethod
    def from_error(cls, error: GatewayError) -> ToolOutcome:
        """The outcome for a refusal or failure raised anywhere in the chain."""
        host = getattr(error, "host", None) if error.status == "egress_blocked" else None
        return cls(
            status=OutcomeStatus(error.status),
            code=error.code,
            message=str(error),
            blocked_host=host,
        )

    def with_duration(self, duration_ms: float) -> ToolOutcome:
        """A copy carrying the measured duration."""
        return self.model_copy(update={"duration_ms": round(max(duration_ms, 0.0), 3)})


class AuditRecord(BaseModel):
    """Who called what, and how it ended: what `gateway.chain.invoke` returns with each outcome.

    Args and result are already deep-redacted (see `gateway.redact`). `tool_version` and
    `side_effects` come from the tool's declaration (None / False for an unknown tool).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant_id: str
    subject: str
    run_id: str
    agent: str
    call_id: str
    tool: str
    args: Any
    outcome: ToolOutcome
    duration_ms: float = Field(ge=0)
    tool_version: str | None = None
    side_effects: bool = False


class Settled(Exception):
    """Control flow, not an error: the call already has a recorded outcome, returned as is.

    Raised by a `gateway.ports.CallGuard` before the tool runs (a redelivered call whose
    first delivery recorded its outcome); `gateway.chain.invoke` returns its outcome and
    audit record instead of running the tool.
    """

    def __init__(self, outcome: ToolOutcome, audit: AuditRecord) -> None:
        super().__init__(outcome.code)
        self.outcome = outcome
        self.audit = audit
