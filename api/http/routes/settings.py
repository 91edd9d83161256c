"""``/api/v1/settings``: the tenant's preferences over the deployment defaults.

A change to ``approved_critical_tools`` (the CRITICAL tools runs may ask for) is written
to the tenant's audit log in the same transaction as the settings themselves.
"""

import uuid

from fastapi import APIRouter
from pydantic import BaseModel

from api.app.auth import Principal
from api.app.errors import ModelNotAllowed
from api.app.preferences import (
    EVERY_SERVED_MODEL,
    Effective,
    Preferences,
    overlay,
    stored_preferences,
)
from api.http.responses import ADMIN, errors
from api.http.routes.common import Admin, Caller, Defaults, Starter, TenantSettings
from bus.store import AuditEntry, TenantSettingsStore

router = APIRouter(prefix="/api/v1/settings", tags=["settings"])
CRITICAL = "approved_critical_tools"


class TenantSettingsView(BaseModel):
    """What the tenant stored, the deployment defaults, and the result of the overlay."""

    tenant_id: str
    preferences: Preferences
    defaults: Effective
    effective: Effective
    updated_by: str | None = None


async def _view(
    store: TenantSettingsStore, defaults: Effective, tenant_id: str
) -> TenantSettingsView:
    record = await store.get(tenant_id)
    prefs = Preferences() if record is None else stored_preferences(record.settings)
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
async def get_settings(
    tenant_settings: TenantSettings, defaults: Defaults, caller: Caller
) -> TenantSettingsView:
    """The tenant's settings (any key of the tenant may read them)."""
    return await _view(tenant_settings, defaults, caller.tenant_id)


@router.put("", response_model=TenantSettingsView, responses=errors(*ADMIN, ModelNotAllowed))
async def put_settings(
    body: Preferences,
    tenant_settings: TenantSettings,
    defaults: Defaults,
    starter: Starter,
    admin: Admin,
) -> TenantSettingsView:
    """Replace the tenant's preferences (admin keys only); null fields take the defaults.

    A model outside ``AGENTBUS_LLM_MODELS`` is refused (403 ``model_not_allowed``), in
    ``user_models`` too (the models user keys may choose besides the tenant's, ``"*"`` for
    every served one; unset, user keys use the tenant's model; admin keys choose any). The
    agents' prompts, models and tool scoping are kept unless given: they are managed at
    ``/api/v1/agents/config``. So are the approved CRITICAL tools (``[]`` withdraws them
    all); every change to them is audited.
    """
    starter.check_models(
        {m for m in (body.model,) if m}
        | set((body.agent_models or {}).values())
        | (set(body.user_models or []) - {EVERY_SERVED_MODEL})
    )
    prefs = body.model_dump(mode="json", exclude_none=True)
    record = await tenant_settings.get(admin.tenant_id)
    for kept in ("agent_prompts", "agent_models", "researcher_tools", CRITICAL):
        if kept not in prefs and record is not None and kept in record.settings:
            prefs[kept] = record.settings[kept]
    before: set[str] = set(record.settings.get(CRITICAL) or []) if record is not None else set()
    audit = _critical_change(admin, before, set(prefs.get(CRITICAL) or []))
    await tenant_settings.put(admin.tenant_id, prefs, updated_by=admin.subject, audit=audit)
    starter.forget(admin.tenant_id)
    return await _view(tenant_settings, defaults, admin.tenant_id)


def _critical_change(admin: Principal, before: set[str], after: set[str]) -> list[AuditEntry]:
    """The audit row of a change to the tenant's approved CRITICAL tools (none if none)."""
    if before == after:
        return []
    approved, withdrawn = sorted(after - before), sorted(before - after)
    said = [f"approved {', '.join(approved)}"] if approved else []
    said += [f"withdrew {', '.join(withdrawn)}"] if withdrawn else []
    return [
        AuditEntry(
            tenant_id=admin.tenant_id,
            subject=admin.subject,
            run_id="",
            agent="settings",
            call_id=f"settings:{uuid.uuid4().hex}",
            tool=CRITICAL,
            args={"approved": approved, "withdrawn": withdrawn, "now": sorted(after)},
            status="ok",
            code="critical_tools_changed",
            message=f"{admin.subject} {' and '.join(said)} (key {admin.key_id})",
            duration_ms=0.0,
        )
    ]
