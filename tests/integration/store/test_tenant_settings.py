"""TenantSettingsStore conformance: the same behaviour on SQLite and Postgres."""

from __future__ import annotations

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from bus.store import TenantSettingsStore


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
