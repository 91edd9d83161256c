"""API keys carry their holder's ACL groups (issue 13).

Documents were ingested with ACL groups, but no key carried any, so group-scoped
documents reached nobody. Existing keys get no groups (``[]``): they keep seeing exactly
what they saw before (the tenant's ``*`` documents).

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add api_keys.groups, a JSON list of group names (empty for existing keys)."""
    op.add_column(
        "api_keys",
        sa.Column("groups", sa.JSON(), nullable=False, server_default=sa.text("'[]'")),
    )


def downgrade() -> None:
    """Drop the column (keys lose their groups)."""
    with op.batch_alter_table("api_keys") as batch:
        batch.drop_column("groups")
