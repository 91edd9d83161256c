"""The tenant's settings as the client reads them.

Not one of the shared models: the server types each part (``api.app.preferences``'s
``Preferences`` and ``Effective``, which change with every new setting); the client keeps
them as plain documents, so a setting added on the server needs no new client.
"""

from __future__ import annotations

from typing import Any

from agentbus_contracts.base import View


class TenantSettings(View):
    """The tenant's stored preferences, the deployment defaults and the overlay of both."""

    tenant_id: str
    preferences: dict[str, Any]
    defaults: dict[str, Any]
    effective: dict[str, Any]
    updated_by: str | None = None
