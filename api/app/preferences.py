"""Tenant preferences: what a tenant admin may set, and how it overlays the deployment.

Three layers, later ones win where they say something: the deployment's settings
(``AGENTBUS_*``), the tenant's stored preferences (``PUT /api/v1/settings``), and what one
question asks for (`bus.run_state.QuestionSettings`: model, mode, accuracy, think, use
tools, fact-check, tool hops, approve high-risk, the CRITICAL tools it asks to use: only
among those the tenant's admin approved).

A model, the tenant's or a question's, must be one the deployment serves
(``AGENTBUS_LLM_MODELS``); anything else is refused (403 ``model_not_allowed``). Choosing
a question's model spends what the tenant pays for, so it is a privilege: a user key gets
the tenant's model unless an admin lists others in ``user_models`` (``["*"]``: every
served model); admin keys choose any served model.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from api.app.errors import BudgetAboveTenant, ModelNotAllowed
from bus.commands import RunSettings
from bus.retention import RetentionPolicy
from bus.run_state import (
    MAX_BUDGET_TOKENS,
    MAX_BUDGET_USD,
    MAX_TOOL_HOPS,
    TOOL_NAME_PATTERN,
    Budgets,
    Multitask,
    QuestionSettings,
)
from gateway.hosts import canonical_pattern
from gateway.mcp_config.servers import McpServerConfig

ToolName = Annotated[str, Field(pattern=TOOL_NAME_PATTERN)]
Mode = Literal["single", "multi", "custom"]
Accuracy = Literal["standard", "accurate"]
MIN_TIMEOUT_S = 30.0
MAX_TIMEOUT_S = 3600.0
#: In ``user_models``: user keys may choose every served model (what migration 0021 gives
#: the tenants that existed before user keys were held to the tenant's model).
EVERY_SERVED_MODEL = "*"


def _hosts(value: list[str] | None) -> list[str] | None:
    if value is None:
        return None
    # Canonical and deduplicated, so what is stored is what the gateway will compare.
    return sorted({canonical_pattern(v) for v in value if v.strip()})


class Preferences(BaseModel):
    """A tenant's stored preferences; a field left null takes the deployment default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | None = Field(default=None, min_length=1, max_length=200)
    mode: Mode | None = None
    accuracy: Accuracy | None = None
    think: bool | None = None
    use_tools: bool | None = None
    egress_enabled: bool | None = None
    egress_hosts: list[str] | None = Field(
        default=None, max_length=200, description="Hosts, *.suffix wildcards, IPs, or '*'."
    )
    timeout_s: float | None = Field(default=None, ge=MIN_TIMEOUT_S, le=MAX_TIMEOUT_S)
    verifier_check: bool | None = Field(
        default=None, description="The last judge fact-checks the answer (re-query + tools)."
    )
    max_tool_hops: int | None = Field(default=None, ge=0, le=MAX_TOOL_HOPS)
    approve_high_risk: bool | None = Field(
        default=None, description="Runs may call HIGH-risk tools without asking (default)."
    )
    agent_models: dict[str, str] | None = Field(
        default=None, description="Per-agent models (see /api/v1/agents/config)."
    )
    user_models: list[str] | None = Field(
        default=None,
        max_length=50,
        description="The models a user key may choose with a question's `model` (None: only "
        "the tenant's model; [\"*\"]: every served model); the tenant's model is always "
        "allowed, and admin keys choose any.",
    )
    human_gate: bool | None = Field(default=None, description="Approve answers (multi).")
    multitask: Multitask | None = Field(
        default=None,
        description="A question asked while its conversation has a run in flight: enqueue "
        "(default), reject, interrupt or rollback.",
    )
    sources: list[str] | None = Field(
        default=None, max_length=8, description="Retrieval sources multi mode may gather from."
    )
    single_context: bool | None = Field(
        default=None,
        description="Single mode searches the tenant's documents for the question and gives "
        "the model the top passages, numbered for citation, before its first call (default on).",
    )
    memory: bool | None = Field(
        default=None,
        description="Long-term memory per user: what users say about themselves is "
        "remembered across conversations and given to runs as notes (default on). Off: "
        "nothing is remembered and nothing remembered is retrieved.",
    )
    agent_prompts: dict[str, str] | None = Field(
        default=None, description="Per-agent system prompts (see /api/v1/agents/config)."
    )
    researcher_tools: list[str] | None = Field(
        default=None, max_length=200, description="Tools the researcher may call (multi)."
    )
    enabled_tools: list[str] | None = Field(
        default=None, max_length=200, description="The tools this tenant uses (None: all)."
    )
    approved_critical_tools: list[ToolName] | None = Field(
        default=None,
        max_length=64,
        description="CRITICAL tools a run may ask for (approve_critical); every change is "
        "audited. Kept when the field is left out; [] withdraws every approval.",
    )
    token_budget: int | None = Field(
        default=None, ge=1, le=MAX_BUDGET_TOKENS, description="Tokens one run may spend."
    )
    cost_budget_usd: float | None = Field(
        default=None, gt=0, le=MAX_BUDGET_USD, description="US dollars one run may spend."
    )
    user_daily_tokens: int | None = Field(
        default=None, ge=1, le=MAX_BUDGET_TOKENS, description="Tokens one user may spend a day."
    )
    user_daily_cost_usd: float | None = Field(
        default=None, gt=0, le=MAX_BUDGET_USD, description="US dollars one user may spend a day."
    )
    tenant_monthly_tokens: int | None = Field(
        default=None, ge=1, le=MAX_BUDGET_TOKENS, description="Tokens the tenant may spend a month."
    )
    tenant_monthly_cost_usd: float | None = Field(
        default=None,
        gt=0,
        le=MAX_BUDGET_USD,
        description="US dollars the tenant may spend a month.",
    )
    weight: int | None = Field(
        default=None,
        ge=1,
        le=100,
        description="The tenant's share of the workers when tenants queue (default 1).",
    )
    mcp_servers: list[McpServerConfig] | None = Field(
        default=None,
        max_length=20,
        description="The tenant's own MCP servers: streamable-HTTP URLs only (a stdio "
        "command would run on the gateway's host, so only the deployment may set one).",
    )

    retention: RetentionPolicy | None = Field(
        default=None,
        description="Days each kind of the tenant's data is kept (runs, messages, "
        "checkpoints, blobs, audit); a kind left null takes the deployment's "
        "AGENTBUS_RETENTION, and with neither it is kept forever.",
    )

    _canonical_hosts = field_validator("egress_hosts")(_hosts)

    @field_validator("approved_critical_tools")
    @classmethod
    def _sorted_names(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else sorted(set(value))

    @field_validator("mcp_servers")
    @classmethod
    def _http_only(cls, value: list[McpServerConfig] | None) -> list[McpServerConfig] | None:
        if value is not None and any(server.command is not None for server in value):
            raise ValueError("a tenant's MCP servers are URLs; stdio commands are deployment-only")
        return value


def stored_preferences(doc: dict[str, Any]) -> Preferences:
    """Preferences as stored, read back: a timeout stored before it was bounded to
    30-3600 s is brought into range rather than failing the tenant's every run."""
    timeout = doc.get("timeout_s")
    if isinstance(timeout, int | float) and not MIN_TIMEOUT_S <= timeout <= MAX_TIMEOUT_S:
        doc = {**doc, "timeout_s": min(max(timeout, MIN_TIMEOUT_S), MAX_TIMEOUT_S)}
    return Preferences.model_validate(doc)


class Effective(BaseModel):
    """The tenant's settings after the overlay: what a run started now would use."""

    model_config = ConfigDict(frozen=True)

    model: str | None
    mode: Mode
    accuracy: Accuracy
    think: bool
    use_tools: bool
    egress_enabled: bool
    egress_hosts: list[str]
    timeout_s: float
    verifier_check: bool = True
    max_tool_hops: int = 8
    approve_high_risk: bool = False
    human_gate: bool = False
    multitask: Multitask = "enqueue"
    single_context: bool = True
    memory: bool = True
    sources: list[str] | None = Field(
        default=None,
        description="None: the sources that exist for the tenant (documents, and the "
        "knowledge graph built from them, when any are ingested; memory when the "
        "conversation has history; web with egress on).",
    )
    agent_prompts: dict[str, str] = {}
    agent_models: dict[str, str] = {}
    user_models: list[str] | None = None
    researcher_tools: list[str] | None = None
    approved_critical_tools: list[str] = []
    token_budget: int | None = None
    cost_budget_usd: float | None = None
    user_daily_tokens: int | None = None
    user_daily_cost_usd: float | None = None
    tenant_monthly_tokens: int | None = None
    tenant_monthly_cost_usd: float | None = None
    weight: int = 1


def deployment_defaults(
    *,
    model: str | None,
    egress_enabled: bool,
    allowed_egress_hosts: str,
    timeout_s: float,
    human_gate: bool,
    mode: Mode = "single",
    accuracy: Accuracy = "standard",
    verifier_check: bool = True,
    max_tool_hops: int = 8,
    approve_high_risk: bool = False,
) -> Effective:
    """The deployment's own values, before any tenant preference.

    Args:
        model: the default model (the first of ``AGENTBUS_LLM_MODELS``).
        egress_enabled: tools may reach the internet (``AGENTBUS_EGRESS_ENABLED``).
        allowed_egress_hosts: comma-separated hosts (``AGENTBUS_ALLOWED_EGRESS_HOSTS``).
        timeout_s: the whole-run deadline (``AGENTBUS_RUN_DEADLINE_S``).
        human_gate: approve answers before they are final (``AGENTBUS_AGENT_HUMAN_GATE``).
        mode, accuracy: ``AGENTBUS_AGENT_MODE``, ``AGENTBUS_AGENT_ACCURACY``.
        verifier_check: the fact-check toggle (``AGENTBUS_VERIFIER_CHECK``).
        max_tool_hops: the researcher's round trips (``AGENTBUS_AGENT_MAX_TOOL_HOPS``).
        approve_high_risk: HIGH-risk tools run without asking (``AGENTBUS_APPROVE_HIGH_RISK``).
    """
    return Effective(
        model=model,
        mode=mode,
        accuracy=accuracy,
        think=False,
        use_tools=True,
        egress_enabled=egress_enabled,
        egress_hosts=_hosts(allowed_egress_hosts.split(",")) or [],
        timeout_s=min(max(timeout_s, MIN_TIMEOUT_S), MAX_TIMEOUT_S),
        verifier_check=verifier_check,
        max_tool_hops=max_tool_hops,
        approve_high_risk=approve_high_risk,
        human_gate=human_gate,
    )


def overlay(defaults: Effective, preferences: Preferences | None) -> Effective:
    """The defaults with the tenant's non-null preferences on top."""
    if preferences is None:
        return defaults
    # Only what a run's settings snapshot holds; tool and MCP choices go to the gateway.
    given = preferences.model_dump(exclude_none=True, include=set(Effective.model_fields))
    return defaults.model_copy(update=given)


def run_budgets(effective: Effective, ask: QuestionSettings) -> Budgets:
    """The run's limits: the question's budget where it set one (never above the tenant's),
    else the tenant's; the user's day and the tenant's month as the tenant set them.

    Raises:
        BudgetAboveTenant: the question asked for more than the tenant allows one run.
    """
    for name, asked, allowed in (
        ("token_budget", ask.token_budget, effective.token_budget),
        ("cost_budget_usd", ask.cost_budget_usd, effective.cost_budget_usd),
    ):
        if asked is not None and allowed is not None and asked > allowed:
            raise BudgetAboveTenant(
                f"settings.{name} {asked:g} is above the tenant's {allowed:g}",
                field=f"settings.{name}",
            )
    return Budgets(
        run_tokens=ask.token_budget or effective.token_budget,
        run_cost_usd=ask.cost_budget_usd or effective.cost_budget_usd,
        user_day_tokens=effective.user_daily_tokens,
        user_day_cost_usd=effective.user_daily_cost_usd,
        tenant_month_tokens=effective.tenant_monthly_tokens,
        tenant_month_cost_usd=effective.tenant_monthly_cost_usd,
    )


def run_settings(effective: Effective, ask: QuestionSettings) -> RunSettings:
    """The settings snapshot a run starts with: the tenant's, then the question's choices.

    Sources the tenant left unset start empty; the starter fills in the ones that exist.

    Raises:
        BudgetAboveTenant: the question asked for more than the tenant allows one run.
    """
    budgets = run_budgets(effective, ask)
    chosen = ask.model_dump(
        exclude_none=True, exclude={"approve_critical", "token_budget", "cost_budget_usd"}
    )
    merged = effective.model_copy(update=chosen)
    return RunSettings(
        mode=merged.mode,
        accuracy=merged.accuracy,
        think=merged.think,
        use_tools=merged.use_tools,
        approve_high_risk=merged.approve_high_risk,
        approve_critical=sorted(set(ask.approve_critical)),
        max_tool_hops=merged.max_tool_hops,
        verifier_check=merged.verifier_check,
        model=merged.model,
        agent_models=merged.agent_models,
        timeout_s=merged.timeout_s,
        human_gate=merged.human_gate,
        sources=merged.sources or [],
        agent_prompts=merged.agent_prompts,
        researcher_tools=merged.researcher_tools,
        budgets=budgets,
        memory=merged.memory,
    )


def models_chosen(effective: Effective, ask: QuestionSettings) -> set[str]:
    """Every model a run with these settings would call (to check against the served list)."""
    chosen = {m for m in (ask.model or effective.model,) if m}
    return chosen | set(effective.agent_models.values())


def user_may_choose(effective: Effective, model: str) -> bool:
    """Whether a user (not admin) key may ask a question with this ``model``: the tenant's
    model, or one an admin listed in ``user_models`` (``*``: every served model)."""
    allowed = effective.user_models or []
    return model == effective.model or model in allowed or EVERY_SERVED_MODEL in allowed


def check_user_model(effective: Effective, model: str | None, *, is_admin: bool) -> None:
    """Refuse a model a key chose for a question when the key may not choose it.

    Raises:
        ModelNotAllowed: a user key chose a model other than the tenant's that no admin
            listed in ``user_models``.
    """
    if model is None or is_admin or user_may_choose(effective, model):
        return
    raise ModelNotAllowed(
        f"the model {model!r} is not one this tenant's users may choose: a user key uses "
        f"the tenant's model ({effective.model!r}) unless an admin lists others in the "
        "tenant setting `user_models`",
        field="settings.model",
        hint="leave settings.model out, or ask an admin to add the model to user_models "
        "(PUT /api/v1/settings; GET /api/v1/models lists what you may choose)",
    )
