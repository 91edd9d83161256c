"""Tenants that existed before choosing a model became a privilege keep every served model.

Until now a tenant whose ``user_models`` was unset let its user keys choose every served
model. From here unset means the tenant's model only (least privilege: a chosen model
spends what the tenant pays for). So that no existing tenant loses what it allowed, this
migration writes ``user_models: ["*"]`` (every served model) wherever it was unset: on
each stored preferences row without it, and on a new row for each tenant that has keys or
runs but never stored preferences.

``"*"`` rather than today's served list: the served list is ``AGENTBUS_LLM_MODELS``, an
environment setting of the API processes that the database never sees, and today a model
an operator adds later becomes choosable at once. A copy of the list taken now would be a
guess at upgrade time and would stop following it; ``"*"`` keeps exactly today's meaning.

Revision ID: 0021
Revises: 0020
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | Sequence[str] | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: Who the rows this migration writes say changed them.
_BY = "migration 0021"
_EVERY = ["*"]
_SETTINGS = sa.table(
    "tenant_settings",
    sa.column("tenant_id", sa.String()),
    sa.column("settings", sa.JSON()),
    sa.column("updated_at", sa.DateTime(timezone=True)),
    sa.column("updated_by", sa.String()),
)


def _all_tenants(conn: sa.Connection) -> None:
    """On Postgres, see every tenant's rows past row-level security (this transaction)."""
    if conn.dialect.name == "postgresql":
        conn.execute(sa.text("SELECT set_config('app.all_tenants', 'on', true)"))


def _stored(conn: sa.Connection) -> dict[str, dict[str, Any]]:
    rows = conn.execute(sa.select(_SETTINGS.c.tenant_id, _SETTINGS.c.settings))
    return {r.tenant_id: dict(r.settings or {}) for r in rows}


def upgrade() -> None:
    """Give every existing tenant without ``user_models`` the ``["*"]`` marker."""
    conn = op.get_bind()
    _all_tenants(conn)
    stored = _stored(conn)
    for tenant, settings in stored.items():
        if settings.get("user_models") is None:
            conn.execute(
                sa.update(_SETTINGS)
                .where(_SETTINGS.c.tenant_id == tenant)
                .values(settings=settings | {"user_models": _EVERY})
            )
    known = sa.union(
        sa.select(sa.column("tenant_id")).select_from(sa.table("api_keys")),
        sa.select(sa.column("tenant_id")).select_from(sa.table("runs")),
    )
    now = datetime.now(UTC)
    if conn.dialect.name == "sqlite":  # stored naive UTC there (``UTCDateTime``)
        now = now.replace(tzinfo=None)
    for tenant in sorted(set(conn.execute(known).scalars()) - set(stored)):
        conn.execute(
            sa.insert(_SETTINGS).values(
                tenant_id=tenant,
                settings={"user_models": _EVERY},
                updated_at=now,
                updated_by=_BY,
            )
        )


def downgrade() -> None:
    """Take the marker away again (unset meant every served model before 0021); drop the
    rows this migration created and no admin changed since."""
    conn = op.get_bind()
    _all_tenants(conn)
    for tenant, settings in _stored(conn).items():
        if settings.get("user_models") != _EVERY:
            continue
        rest = {k: v for k, v in settings.items() if k != "user_models"}
        conn.execute(
            sa.delete(_SETTINGS).where(
                _SETTINGS.c.tenant_id == tenant, _SETTINGS.c.updated_by == _BY
            )
        )
        conn.execute(
            sa.update(_SETTINGS).where(_SETTINGS.c.tenant_id == tenant).values(settings=rest)
        )
