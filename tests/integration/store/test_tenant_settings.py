"""TenantSettingsStore conformance: the same behaviour on SQLite and Postgres."""

from __future__ import annotations

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from bus.errors import StoreError
from bus.store import AuditEntry, AuditStore, Scope, TenantSettingsStore, tenant_settings


@pytest.fixture
def prefs(engine: AsyncEngine) -> TenantSettingsStore:
    return TenantSettingsStore(engine)


async def test_a_tenant_without_settings_has_none(prefs: TenantSettingsStore) -> None:
    assert await prefs.get("tenant-a") is None


async def test_put_replaces_the_whole_document(prefs: TenantSettingsStore) -> None:
    first = await prefs.put("tenant-a", {"think": True, "egress_hosts": ["a.example"]}, "alice")
    second = await prefs.put("tenant-a", {"mode": "multi"}, "bob")

    assert first.settings == {"think": True, "egress_hosts": ["a.example"]}
    assert second.settings == {"mode": "multi"} and second.updated_by == "bob"
    assert second.updated_at >= first.updated_at
    assert await prefs.get("tenant-a") == second


async def test_tenants_do_not_share_settings(prefs: TenantSettingsStore) -> None:
    await prefs.put("tenant-a", {"think": True}, "alice")

    assert await prefs.get("tenant-b") is None


async def test_delete_returns_to_defaults(prefs: TenantSettingsStore) -> None:
    await prefs.put("tenant-a", {"think": True}, "alice")

    assert await prefs.delete("tenant-a") is True
    assert await prefs.delete("tenant-a") is False
    assert await prefs.get("tenant-a") is None


def change(tenant: str = "tenant-a") -> AuditEntry:
    return AuditEntry(
        tenant_id=tenant,
        subject="root",
        run_id="",
        agent="settings",
        call_id="settings:1",
        tool="approved_critical_tools",
        args={"approved": ["wipe_cache"]},
        status="ok",
        code="critical_tools_changed",
        duration_ms=0.0,
    )


async def test_a_change_and_its_audit_row_commit_together(
    prefs: TenantSettingsStore, engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    audit = AuditStore(engine)
    await prefs.put(
        "tenant-a", {"approved_critical_tools": ["wipe_cache"]}, "root", audit=[change()]
    )
    rows = await audit.list(Scope.tenant("tenant-a"))
    assert [r.tool for r in rows] == ["approved_critical_tools"]

    async def broken(*args: object, **kwargs: object) -> None:
        raise StoreError("the audit log failed")

    monkeypatch.setattr(tenant_settings, "append_in", broken)
    with pytest.raises(StoreError, match="audit"):
        await prefs.put("tenant-a", {"approved_critical_tools": []}, "root", audit=[change()])

    kept = await prefs.get("tenant-a")
    assert kept is not None and kept.settings == {"approved_critical_tools": ["wipe_cache"]}
    assert await audit.count("tenant-a") == 1 and (await audit.verify("tenant-a")).chains[0].ok


async def test_a_change_is_never_audited_in_another_tenants_chain(
    prefs: TenantSettingsStore,
) -> None:
    with pytest.raises(ValueError, match="own chain"):
        await prefs.put("tenant-a", {}, "root", audit=[change("tenant-b")])
    assert await prefs.get("tenant-a") is None
