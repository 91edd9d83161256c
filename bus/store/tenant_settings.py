"""The tenant settings repository: one JSON document of preferences per tenant.

The store keeps the document as given; what it may contain and how it overlays the
deployment defaults is the API's business (``api.app.preferences``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator
from sqlalchemy import delete, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.dml import Insert

from bus.errors import StoreError
from bus.store.audit import AuditEntry, append_in
from bus.store.repository import Repository, utcnow
from bus.store.scope import Scope
from bus.store.tables import TenantSettingsRow


class TenantSettingsRecord(BaseModel):
    """A tenant's stored preferences."""

    model_config = ConfigDict(frozen=True, from_attributes=True)

    tenant_id: str = Field(min_length=1, max_length=64)
    settings: dict[str, Any]
    updated_at: AwareDatetime
    updated_by: str = Field(max_length=255)

    @field_validator("updated_at")
    @classmethod
    def _in_utc(cls, value: datetime) -> datetime:
        return value.astimezone(UTC)


def _upsert(session: AsyncSession, values: dict[str, Any]) -> Insert:
    # Both dialects spell ON CONFLICT DO UPDATE the same way through SQLAlchemy.
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        stmt = postgresql.insert(TenantSettingsRow).values(values)
        changed = {k: stmt.excluded[k] for k in ("settings", "updated_at", "updated_by")}
        return stmt.on_conflict_do_update(index_elements=["tenant_id"], set_=changed)
    if dialect == "sqlite":
        stmt = sqlite.insert(TenantSettingsRow).values(values)
        changed = {k: stmt.excluded[k] for k in ("settings", "updated_at", "updated_by")}
        return stmt.on_conflict_do_update(index_elements=["tenant_id"], set_=changed)
    raise StoreError(f"unsupported database {dialect!r}")


class TenantSettingsStore(Repository):
    """Reads and writes tenants' preference documents.

    Args:
        db: an engine (the store makes its own session factory) or a session factory. The
            caller owns the engine and disposes of it.
    """

    _listeners: tuple[Callable[[str], Awaitable[None]], ...] = ()

    def on_change(self, listener: Callable[[str], Awaitable[None]]) -> None:
        """Call ``listener(tenant_id)`` after each committed ``put`` or ``delete``, before it
        returns (the processes that cache a tenant's policy learn of the change this way)."""
        self._listeners = (*self._listeners, listener)

    async def _changed(self, tenant_id: str) -> None:
        for listener in self._listeners:
            await listener(tenant_id)

    async def get(self, tenant_id: str) -> TenantSettingsRecord | None:
        """The tenant's preferences, or None when it never stored any."""
        async with self._scoped(Scope.tenant(tenant_id), "read the tenant settings") as session:
            row = await session.scalar(
                select(TenantSettingsRow).where(TenantSettingsRow.tenant_id == tenant_id)
            )
            return None if row is None else TenantSettingsRecord.model_validate(row)

    async def put(
        self,
        tenant_id: str,
        settings: dict[str, Any],
        updated_by: str,
        *,
        audit: Sequence[AuditEntry] = (),
    ) -> TenantSettingsRecord:
        """Replace the tenant's preferences with ``settings`` (created if absent).

        ``audit`` rows join the tenant's audit chain in the same transaction: the change is
        stored with its audit rows or not at all.

        Raises:
            ValueError: an audit row belongs to another tenant.
            StoreError: the database failed (nothing was written).
        """
        if any(entry.tenant_id != tenant_id for entry in audit):
            raise ValueError("a tenant's settings change is audited in its own chain only")
        values = {
            "tenant_id": tenant_id,
            "settings": settings,
            "updated_at": utcnow(),
            "updated_by": updated_by,
        }
        async with self._scoped(Scope.tenant(tenant_id), "store the tenant settings") as session:
            await session.execute(_upsert(session, values))
            row = await session.scalar(
                select(TenantSettingsRow).where(TenantSettingsRow.tenant_id == tenant_id)
            )
            if row is None:  # deleted between the two statements
                raise StoreError(f"settings of tenant {tenant_id!r} vanished while stored")
            stored = TenantSettingsRecord.model_validate(row)
            for entry in audit:
                await append_in(session, entry)
        await self._changed(tenant_id)
        return stored

    async def delete(self, tenant_id: str) -> bool:
        """Forget the tenant's preferences (back to the deployment defaults)."""
        stmt = (
            delete(TenantSettingsRow)
            .where(TenantSettingsRow.tenant_id == tenant_id)
            .returning(TenantSettingsRow.tenant_id)
            .execution_options(synchronize_session=False)
        )
        async with self._scoped(Scope.tenant(tenant_id), "delete the tenant settings") as session:
            deleted = await session.scalar(stmt) is not None
        await self._changed(tenant_id)
        return deleted
