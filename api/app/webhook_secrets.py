"""The tenant's webhook signing secret: read (made on first request) and rotated (admins)."""

from __future__ import annotations

from agentbus_contracts import WebhookSecret
from api.app.auth import Principal
from bus.store import WebhookSecretStore
from gateway.webhooks.signing import new_secret


class WebhookSecrets:
    """The tenants' webhook signing secrets, as their admins see them."""

    def __init__(self, store: WebhookSecretStore) -> None:
        self._store = store

    async def current(self, admin: Principal) -> WebhookSecret:
        """The admin's tenant's secret, made now if it has none (once, under a race)."""
        record = await self._store.get(admin.tenant_id)
        if record is None:
            record = await self._store.create_if_absent(
                admin.tenant_id, new_secret(), admin.subject
            )
        return WebhookSecret(secret=record.secret, created_at=record.created_at)

    async def rotate(self, admin: Principal) -> WebhookSecret:
        """Replace the admin's tenant's secret with a new one."""
        record = await self._store.replace(admin.tenant_id, new_secret(), admin.subject)
        return WebhookSecret(secret=record.secret, created_at=record.created_at)
