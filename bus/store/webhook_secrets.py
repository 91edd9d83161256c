"""The webhook secret repository: one signing secret per tenant.

The store keeps the secret as given; its format (``whsec_`` + base64) and how it signs are
the gateway's business (``gateway.webhooks.signing``). On Postgres the table is isolated
per tenant by row-level security (migration 0011).
"""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import AwareDatetime, BaseModel, ConfigDict, field_validator
from sqlalchemy import String, select, update
from sqlalchemy.orm import Mapped, mapped_column

from bus.errors import StoreError
from bus.store.repository import Repository, insert_ignoring_conflicts, utcnow
from bus.store.scope import Scope
from bus.store.tables import Base, UTCDateTime


class WebhookSecretRow(Base):
    """A tenant's webhook signing secret (Standard Webhooks ``whsec_`` form)."""

    __tablename__ = "webhook_secrets"

    tenant_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    secret: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    created_by: Mapped[str] = mapped_column(String(255))


class WebhookSecretRecord(BaseModel):
    """A tenant's webhook signing secret."""

    model_config = ConfigDict(frozen=True, from_attributes=True)

    tenant_id: str
    secret: str
    created_at: AwareDatetime
    created_by: str

    @field_validator("created_at")
    @classmethod
    def _in_utc(cls, value: datetime) -> datetime:
        return value.astimezone(UTC)


class WebhookSecretStore(Repository):
    """Reads, creates and replaces tenants' webhook secrets."""

    async def get(self, tenant_id: str) -> WebhookSecretRecord | None:
        """The tenant's secret, or None when it has none yet."""
        async with self._scoped(Scope.tenant(tenant_id), "read the webhook secret") as session:
            row = await session.scalar(
                select(WebhookSecretRow).where(WebhookSecretRow.tenant_id == tenant_id)
            )
            return None if row is None else WebhookSecretRecord.model_validate(row)

    async def create_if_absent(
        self, tenant_id: str, secret: str, created_by: str
    ) -> WebhookSecretRecord:
        """The tenant's secret, storing ``secret`` first if it has none (race-free)."""
        values = {
            "tenant_id": tenant_id,
            "secret": secret,
            "created_at": utcnow(),
            "created_by": created_by,
        }
        scope = Scope.tenant(tenant_id)
        async with self._scoped(scope, "create the webhook secret") as session:
            await session.execute(
                insert_ignoring_conflicts(session, WebhookSecretRow, values, ["tenant_id"])
            )
            row = await session.scalar(
                select(WebhookSecretRow).where(WebhookSecretRow.tenant_id == tenant_id)
            )
            if row is None:
                raise StoreError(f"the webhook secret of {tenant_id!r} vanished while stored")
            return WebhookSecretRecord.model_validate(row)

    async def replace(self, tenant_id: str, secret: str, created_by: str) -> WebhookSecretRecord:
        """Rotate: the tenant's secret becomes ``secret`` (created if it had none)."""
        now = utcnow()
        values = {"tenant_id": tenant_id, "secret": secret, "created_at": now}
        values["created_by"] = created_by
        scope = Scope.tenant(tenant_id)
        async with self._scoped(scope, "rotate the webhook secret") as session:
            changed = await session.execute(
                update(WebhookSecretRow)
                .where(WebhookSecretRow.tenant_id == tenant_id)
                .values(secret=secret, created_at=now, created_by=created_by)
                .returning(WebhookSecretRow.tenant_id)
                .execution_options(synchronize_session=False)
            )
            if changed.scalar() is None:
                await session.execute(
                    insert_ignoring_conflicts(session, WebhookSecretRow, values, ["tenant_id"])
                )
        record = await self.get(tenant_id)
        if record is None:
            raise StoreError(f"the webhook secret of {tenant_id!r} vanished while stored")
        return record
