"""The gateway's per-tenant policy from the tenants' stored preferences, and the
preferences themselves for the steps that need one (the memory step's ``memory``).

Implements ``gateway.ports.TenantPolicies``: the deployment's policy with a tenant's own
``enabled_tools``, ``egress_enabled`` / ``egress_hosts``, (URL-only) ``mcp_servers`` and
``approved_critical_tools`` (``PUT /api/v1/settings``) on top. Cached per tenant
for a few seconds, so a batch of tool calls does not cost a SQL read each; when the entry
expires, the steps that ask meanwhile share one read (measured under load before: 10-30
reads of the same row at each expiry, ~0.2 per multi run).

A change is never served stale: each use reads the tenant's settings version
(``bus.tenant_versions``, which every committed change increments, in any process) and a
cached policy of another version is read again; a change made in this process also drops
its entry at once (`forget`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from api.app.preferences import stored_preferences
from gateway.ports import TenantPolicies, TenantPolicy

if TYPE_CHECKING:
    from bus.store import TenantSettingsStore


_NONE: Mapping[str, Any] = MappingProxyType({})
#: What one read of a tenant gives: its policy, and its stored preferences.
_Read = tuple[TenantPolicy, Mapping[str, Any]]


class StoredTenantPolicies:
    """``TenantPolicies`` overlaying each tenant's stored egress preferences.

    Args:
        base: the deployment's policies (every tenant's defaults).
        store: the tenants' stored preferences.
        cache_s: how long a tenant's policy is reused before re-reading the store.
        version: the tenant's settings version (None: only changes made in this process
            are seen before the entry expires).
    """

    def __init__(
        self,
        base: TenantPolicies,
        store: TenantSettingsStore,
        *,
        cache_s: float = 5.0,
        version: Callable[[str], Awaitable[int]] | None = None,
    ) -> None:
        self._base = base
        self._store = store
        self._cache_s = cache_s
        self._version = version
        self._local: dict[str, int] = {}  # changes made in this process, per tenant
        self._cache: dict[str, tuple[float, tuple[int, int], _Read]] = {}
        self._reading: dict[tuple[str, tuple[int, int]], asyncio.Future[_Read]] = {}

    async def forget(self, tenant_id: str) -> None:
        """The tenant's settings changed in this process: its cached policy is stale."""
        self._local[tenant_id] = self._local.get(tenant_id, 0) + 1
        self._cache.pop(tenant_id, None)

    def version_of(self, tenant_id: str) -> tuple[int, int] | None:
        """The tenant's settings version its cached policy was read at (None: none cached):
        what a step that just asked for the policy saw, for caches kept beside it."""
        hit = self._cache.get(tenant_id)
        return None if hit is None else hit[1]

    async def for_tenant(self, tenant_id: str) -> TenantPolicy:
        """The deployment policy with the tenant's egress preferences applied."""
        return (await self._current(tenant_id))[0]

    async def settings_of(self, tenant_id: str) -> Mapping[str, Any]:
        """The tenant's stored preferences as they are now (empty: none stored), from the
        same cache: a step that asks costs the version's read, not a SQL read."""
        return (await self._current(tenant_id))[1]

    async def _current(self, tenant_id: str) -> _Read:
        remote = await self._version(tenant_id) if self._version is not None else 0
        version = (remote, self._local.get(tenant_id, 0))
        hit = self._cache.get(tenant_id)
        if hit is not None and hit[0] > time.monotonic() and hit[1] == version:
            return hit[2]
        key = (tenant_id, version)
        reading = self._reading.get(key)
        if reading is None:
            reading = asyncio.ensure_future(self._read(tenant_id, version))
            self._reading[key] = reading
            reading.add_done_callback(lambda _: self._reading.pop(key, None))
        # Shielded: one caller cancelled (its step timed out) does not fail the others.
        return await asyncio.shield(reading)

    async def _read(self, tenant_id: str, version: tuple[int, int]) -> _Read:
        now = time.monotonic()
        policy = await self._base.for_tenant(tenant_id)
        record = await self._store.get(tenant_id)
        stored: Mapping[str, Any] = _NONE
        if record is not None:
            stored = MappingProxyType(dict(record.settings))
            prefs = stored_preferences(record.settings)
            hosts = None if prefs.egress_hosts is None else frozenset(prefs.egress_hosts)
            tools = None if prefs.enabled_tools is None else frozenset(prefs.enabled_tools)
            critical = prefs.approved_critical_tools
            servers = None
            if prefs.mcp_servers is not None:  # the tenant's URLs next to the deployment's
                servers = (*policy.mcp_servers, *prefs.mcp_servers)
            policy = policy.overlay(
                enabled_tools=tools,
                egress_enabled=prefs.egress_enabled,
                allowed_egress_hosts=hosts,
                mcp_servers=servers,
                critical_tools=None if critical is None else frozenset(critical),
            )
        if len(self._cache) > 10_000:
            self._cache.clear()
        read = (policy, stored)
        self._cache[tenant_id] = (now + self._cache_s, version, read)
        return read
