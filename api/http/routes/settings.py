"""``/api/v1/settings``: the tenant's preferences over the deployment defaults."""

from fastapi import APIRouter
from pydantic import BaseModel

from api.http.preferences import Effective, Preferences, overlay
from api.http.routes.common import Admin, Caller, Deps

router = APIRouter(prefix="/api/v1/settings", tags=["settings"])


class TenantSettingsView(BaseModel):
    """What the tenant stored, the deployment defaults, and the result of the overlay."""

    tenant_id: str
    preferences: Preferences
    defaults: Effective
    effective: Effective
    updated_by: str | None = None


async def _view(deps: Deps, tenant_id: str) -> TenantSettingsView:
    record = await deps.tenant_settings.get(tenant_id)
    prefs = Preferences() if record is None else Preferences.model_validate(record.settings)
    defaults = deps.defaults
    return TenantSettingsView(
        tenant_id=tenant_id,
        preferences=_shown(prefs),
        defaults=defaults,
        effective=overlay(defaults, prefs),
        updated_by=None if record is None else record.updated_by,
    )


def _shown(prefs: Preferences) -> Preferences:
    """The preferences as shown: MCP server headers (API keys) are never echoed back."""
    if not prefs.mcp_servers:
        return prefs
    servers = [
        s.model_copy(update={"headers": dict.fromkeys(s.headers, "[REDACTED]")})
        for s in prefs.mcp_servers
    ]
    return prefs.model_copy(update={"mcp_servers": servers})


@router.get("", response_model=TenantSettingsView)
async def get_settings(deps: Deps, caller: Caller) -> TenantSettingsView:
    """The tenant's settings (any key of the tenant may read them)."""
    return await _view(deps, caller.tenant_id)


@router.put("", response_model=TenantSettingsView)
async def put_settings(body: Preferences, deps: Deps, admin: Admin) -> TenantSettingsView:
    """Replace the tenant's preferences (admin keys only); null fields take the defaults.

    The agents' prompts and tool scoping are kept unless given: they are managed at
    ``/api/v1/agents/config``.
    """
    prefs = body.model_dump(mode="json", exclude_none=True)
    record = await deps.tenant_settings.get(admin.tenant_id)
    for kept in ("agent_prompts", "researcher_tools"):
        if kept not in prefs and record is not None and kept in record.settings:
            prefs[kept] = record.settings[kept]
    await deps.tenant_settings.put(admin.tenant_id, prefs, updated_by=admin.subject)
    deps.starter.forget(admin.tenant_id)
    return await _view(deps, admin.tenant_id)
