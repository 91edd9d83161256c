"""``/api/v1/agents/config`` (per-tenant agent prompts, models and tool scoping),
``/models`` (what a run may choose) and ``/graph``."""

from typing import Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field

from agents import graph, prompts
from api.app.errors import InvalidRequest
from api.app.preferences import Preferences, user_may_choose
from api.http.responses import ADMIN, errors
from api.http.routes.common import Admin, Caller, Defaults, Starter, TenantSettings

router = APIRouter(prefix="/api/v1", tags=["agents"])


class AgentOverride(BaseModel):
    """One agent's system prompt and model; empty falls back to the default."""

    model_config = ConfigDict(extra="forbid")

    name: str
    prompt: str = Field(default="", max_length=8000)
    model: str | None = Field(
        default=None, min_length=1, max_length=200, description="One of GET /api/v1/models."
    )


class AgentsConfig(BaseModel):
    """What an admin may change: prompts and models per agent, the researcher's tools
    (only the fields given change)."""

    model_config = ConfigDict(extra="forbid")

    agents: list[AgentOverride] = []
    researcher_tools: list[str] | None = None


@router.get("/agents/config")
async def get_config(tenant_settings: TenantSettings, caller: Caller) -> dict[str, Any]:
    """The roster with each agent's default prompt and the tenant's saved override."""
    saved = await tenant_settings.saved(caller.tenant_id)
    overrides: dict[str, str] = saved.get("agent_prompts") or {}
    models: dict[str, str] = saved.get("agent_models") or {}
    return {
        "agents": [
            {
                "name": name,
                "default_prompt": default,
                "prompt": overrides.get(name, ""),
                "model": models.get(name),
            }
            for name, default in prompts.DEFAULTS.items()
        ],
        "researcher_tools": saved.get("researcher_tools"),
    }


@router.put("/agents/config", responses=errors(*ADMIN))
async def put_config(
    body: AgentsConfig, tenant_settings: TenantSettings, starter: Starter, admin: Admin
) -> dict[str, Any]:
    """Save prompt and model overrides and tool scoping (multi/custom mode); unknown
    agents: 422.

    Changes only what the body names: an agent left out keeps its prompt and model, an
    entry without ``prompt`` (or ``model``) keeps that one, and ``researcher_tools`` left
    out keeps the tool scope. An empty prompt or a null model goes back to the default;
    ``"researcher_tools": null`` allows every tool again.
    """
    unknown = sorted({a.name for a in body.agents} - set(prompts.DEFAULTS))
    if unknown:
        raise InvalidRequest(
            f"unknown agent(s): {', '.join(unknown)}",
            hint=f"agents are: {', '.join(prompts.DEFAULTS)}",
            field="agents",
        )
    prefs = await tenant_settings.saved(admin.tenant_id)
    prompts_now: dict[str, str] = dict(prefs.get("agent_prompts") or {})
    models_now: dict[str, str] = dict(prefs.get("agent_models") or {})
    for agent in body.agents:  # only the fields each entry names change
        if "prompt" in agent.model_fields_set:
            _put(prompts_now, agent.name, agent.prompt if agent.prompt.strip() else None)
        if "model" in agent.model_fields_set:
            _put(models_now, agent.name, agent.model)
    starter.check_models({a.model for a in body.agents if a.model})
    prefs["agent_prompts"] = prompts_now
    prefs["agent_models"] = models_now
    if "researcher_tools" in body.model_fields_set:
        prefs["researcher_tools"] = body.researcher_tools
    Preferences.model_validate(prefs)  # what the starter will read back must stay valid
    await tenant_settings.save(admin, prefs)
    starter.forget(admin.tenant_id)  # runs started from now on use it
    return await get_config(tenant_settings, admin)


def _put(saved: dict[str, str], name: str, value: str | None) -> None:
    """Set one agent's saved value; None (or an empty prompt) goes back to the default."""
    if value is None:
        saved.pop(name, None)
    else:
        saved[name] = value


@router.get("/models")
async def list_models(starter: Starter, defaults: Defaults, caller: Caller) -> dict[str, Any]:
    """The models the caller may choose (``AGENTBUS_LLM_MODELS``; for a user key, those its
    tenant's admins allow), the deployment's default, and the caller's tenant's choice."""
    effective = await starter.effective(caller.tenant_id)
    models = [m for m in starter.models if caller.is_admin or user_may_choose(effective, m)]
    return {
        "models": models,
        "default": defaults.model,
        "effective": effective.model,
    }


@router.get("/graph")
async def get_graph(
    caller: Caller,
    mode: str = Query("multi", pattern="^(single|multi|custom)$"),
    accuracy: str = Query("standard", pattern="^(standard|accurate)$"),
) -> dict[str, Any]:
    """The agent graph of a mode and accuracy (the same as ``agentbus graph show``): the
    edges some run of them can take, and the retrieval sources a gather fans out to."""
    return {
        "mode": mode,
        "accuracy": accuracy,
        "mermaid": graph.mermaid(mode, accuracy),
        "edges": [_edge(e) for e in graph.drawn(mode, accuracy)],
        "sources": [{"name": n, "description": d} for n, d in graph.SOURCES.items()],
    }


def _edge(edge: graph.Edge) -> dict[str, str | None]:
    return {
        "source": edge.source,
        "outcome": edge.outcome,
        "target": edge.target,
        "when": edge.when,
    }
