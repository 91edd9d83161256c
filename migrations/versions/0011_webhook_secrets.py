"""Per-tenant webhook signing secrets (issue 18); RLS per tenant on Postgres.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | Sequence[str] | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TENANT = "current_setting('app.tenant_id', true)"
_ALL_TENANTS = "current_setting('app.all_tenants', true) = 'on'"
_POLICY = "webhook_secrets_scope"


def upgrade() -> None:
    """Create webhook_secrets; on Postgres, turn on row-level security."""
    op.create_table(
        "webhook_secrets",
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("secret", sa.String(128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(255), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", name=op.f("pk_webhook_secrets")),
    )
    if op.get_context().dialect.name == "postgresql":
        rule = f"{_ALL_TENANTS} OR tenant_id = {_TENANT}"
        op.execute("ALTER TABLE webhook_secrets ENABLE ROW LEVEL SECURITY")
        op.execute("ALTER TABLE webhook_secrets FORCE ROW LEVEL SECURITY")
        op.execute(f"CREATE POLICY {_POLICY} ON webhook_secrets USING ({rule}) WITH CHECK ({rule})")


def downgrade() -> None:
    """Drop webhook_secrets (receivers then need the new secret a later upgrade makes)."""
    if op.get_context().dialect.name == "postgresql":
        op.execute(f"DROP POLICY IF EXISTS {_POLICY} ON webhook_secrets")
    op.drop_table("webhook_secrets")
