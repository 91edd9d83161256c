"""Per-tenant webhook signing secrets (issue 18).

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create webhook_secrets."""
    op.create_table(
        "webhook_secrets",
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("secret", sa.String(128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(255), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", name=op.f("pk_webhook_secrets")),
    )


def downgrade() -> None:
    """Drop webhook_secrets (receivers then need the new secret a later upgrade makes)."""
    op.drop_table("webhook_secrets")
