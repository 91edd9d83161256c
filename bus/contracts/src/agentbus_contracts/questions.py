"""What one question may choose for itself, and the trace context a request carries: the
request side every entry point (REST, websocket, AG-UI, A2A, MCP, ``runs.questions``)
checks a question against."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from agentbus_contracts.base import Frozen
from agentbus_contracts.ids import TEAM_NAME_PATTERN, TOOL_NAME_PATTERN

MAX_TOOL_HOPS = 32
"""The most gateway round trips a tenant or a question may allow the researcher."""
MAX_BUDGET_TOKENS = 1_000_000_000
"""The largest token budget a tenant or a question may set."""
MAX_BUDGET_USD = 1_000_000.0
"""The largest cost budget (US dollars) a tenant or a question may set."""


def _is_none(value: object) -> bool:
    return value is None


class TraceContext(Frozen):
    """W3C trace context, so spans across hops share one trace id."""

    traceparent: str | None = Field(
        default=None, pattern=r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$"
    )
    tracestate: str | None = Field(default=None, max_length=512)


Multitask = Literal["enqueue", "reject", "interrupt", "rollback"]
"""What a question does when its conversation has a run in flight (`bus.store.turns`)."""


class QuestionSettings(Frozen):
    """What one question may choose for itself: REST ``POST /runs``, the websocket ``ask``
    and ``runs.questions`` (external publishers) accept exactly these fields; an unknown
    or out-of-range field is refused with a coded error, never dropped.

    A field left out takes the tenant's setting (then the deployment's).
    """

    model: str | None = Field(
        default=None, min_length=1, max_length=200, description="One of GET /api/v1/models."
    )
    mode: Literal["single", "multi", "custom"] | None = None
    accuracy: Literal["standard", "accurate"] | None = None
    think: bool | None = None
    use_tools: bool | None = None
    verifier_check: bool | None = None
    max_tool_hops: int | None = Field(default=None, ge=0, le=MAX_TOOL_HOPS)
    approve_high_risk: bool | None = None
    approve_critical: list[Annotated[str, Field(pattern=TOOL_NAME_PATTERN)]] = Field(
        default=[],
        max_length=32,
        description="CRITICAL tools this run asks to use; each must be approved by the "
        "tenant's admin (otherwise 403 critical_tool_not_approved).",
    )
    token_budget: int | None = Field(
        default=None,
        ge=1,
        le=MAX_BUDGET_TOKENS,
        description="Tokens this run may spend, at most the tenant's token_budget.",
    )
    cost_budget_usd: float | None = Field(
        default=None,
        gt=0,
        le=MAX_BUDGET_USD,
        description="US dollars this run may spend, at most the tenant's cost_budget_usd.",
    )
    multitask: Multitask | None = Field(
        default=None,
        description="If the conversation has a run in flight: enqueue (the default), "
        "reject (409 conversation_busy), interrupt or rollback the running one.",
    )
    team: str | None = Field(
        default=None,
        pattern=TEAM_NAME_PATTERN,
        exclude_if=_is_none,
        description="Run this team of the tenant's (GET /api/v1/teams), at its version "
        "current now; single and multi name the built-in modes.",
    )
