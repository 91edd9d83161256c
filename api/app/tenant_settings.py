"""The tenant's settings as the API reads and writes them: its stored preferences over the
deployment defaults (``/api/v1/settings``) and the agents' overrides among them
(``/api/v1/agents/config``).

A change to ``approved_critical_tools`` (the CRITICAL tools runs may ask for) is written
to the tenant's audit log in the same transaction as the settings themselves.
"""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel

from api.app.auth import Principal
from api.app.preferences import Effective, Preferences, overlay, stored_preferences
from bus.store import AuditEntry, TenantSettingsStore

CRITICAL = "approved_critical_tools"
#: What a replacement of the preferences keeps unless it names them: the agents' overrides
#: (``/api/v1/agents/config`` manages them) and the approved CRITICAL tools.
_KEPT = ("agent_prompts", "agent_models", "researcher_tools", CRITICAL)


class TenantSettingsView(BaseModel):
    """What the tenant stored, the deployment defaults, and the result of the overlay."""

    tenant_id: str
    preferences: Preferences
    defaults: Effective
    effective: Effective
    updated_by: str | None = None


class SettingsBook:
    """The tenants' settings' use cases: their stored preferences, read and written.

    Args:
        store: the tenants' preferences.
        defaults: the deployment's run settings, before any tenant preference.
    """

    def __init__(self, store: TenantSettingsStore, defaults: Effective) -> None:
        self._store = store
        self._defaults = defaults

    async def view(self, tenant_id: str) -> TenantSettingsView:
        """The tenant's settings, as any key of the tenant reads them."""
        record = await self._store.get(tenant_id)
        prefs = Preferences() if record is None else stored_preferences(record.settings)
        return TenantSettingsView(
            tenant_id=tenant_id,
            preferences=_shown(prefs),
            defaults=self._defaults,
            effective=overlay(self._defaults, prefs),
            updated_by=None if record is None else record.updated_by,
        )

    async def replace(self, admin: Principal, body: Preferences) -> None:
        """Replace the tenant's preferences with ``body``, keeping what it leaves out of
        the agents' overrides and the approved CRITICAL tools; a change to those is audited."""
        prefs = body.model_dump(mode="json", exclude_none=True)
        record = await self._store.get(admin.tenant_id)
        for kept in _KEPT:
            if kept not in prefs and record is not None and kept in record.settings:
                prefs[kept] = record.settings[kept]
        before: set[str] = set(record.settings.get(CRITICAL) or []) if record else set()
        audit = _critical_change(admin, before, set(prefs.get(CRITICAL) or []))
        await self._store.put(admin.tenant_id, prefs, updated_by=admin.subject, audit=audit)

    async def saved(self, tenant_id: str) -> dict[str, Any]:
        """The tenant's stored preferences as a document (empty: none stored)."""
        record = await self._store.get(tenant_id)
        return dict(record.settings) if record else {}

    async def save(self, admin: Principal, prefs: dict[str, Any]) -> None:
        """Store ``prefs`` as the admin's tenant's preferences."""
        await self._store.put(admin.tenant_id, prefs, updated_by=admin.subject)


def _shown(prefs: Preferences) -> Preferences:
    """The preferences as shown: MCP server headers (API keys) are never echoed back."""
    if not prefs.mcp_servers:
        return prefs
    servers = [
        s.model_copy(update={"headers": dict.fromkeys(s.headers, "[REDACTED]")})
        for s in prefs.mcp_servers
    ]
    return prefs.model_copy(update={"mcp_servers": servers})


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
