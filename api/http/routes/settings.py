"""``/api/v1/settings``: the tenant's preferences over the deployment defaults.

A change to ``approved_critical_tools`` (the CRITICAL tools runs may ask for) is written
to the tenant's audit log in the same transaction as the settings themselves
(``api.app.tenant_settings``).
"""

from fastapi import APIRouter

from api.app.errors import ModelNotAllowed
from api.app.preferences import EVERY_SERVED_MODEL, Preferences
from api.app.tenant_settings import TenantSettingsView
from api.http.responses import ADMIN, errors
from api.http.routes.common import Admin, Caller, Starter, TenantSettings

router = APIRouter(prefix="/api/v1/settings", tags=["settings"])


@router.get("", response_model=TenantSettingsView)
async def get_settings(tenant_settings: TenantSettings, caller: Caller) -> TenantSettingsView:
    """The tenant's settings (any key of the tenant may read them)."""
    return await tenant_settings.view(caller.tenant_id)


@router.put("", response_model=TenantSettingsView, responses=errors(*ADMIN, ModelNotAllowed))
async def put_settings(
    body: Preferences,
    tenant_settings: TenantSettings,
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
    await tenant_settings.replace(admin, body)
    starter.forget(admin.tenant_id)
    return await tenant_settings.view(admin.tenant_id)
