"""Teams: ``teams`` holds every version of every tenant's team documents.

The primary key (tenant, name, version) makes a version written once; a run keeps the
version it started with. On Postgres the table gets the tenant policy of migration 0008
(a team belongs to its tenant, not to the admin who wrote it).

Revision ID: 0023
Revises: 0022
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023"
down_revision: str | Sequence[str] | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TENANT = "current_setting('app.tenant_id', true)"
_ALL_TENANTS = "current_setting('app.all_tenants', true) = 'on'"
_TENANT_ONLY = f"{_ALL_TENANTS} OR tenant_id = {_TENANT}"


def upgrade() -> None:
    """Create the table; on Postgres, its policy."""
    op.create_table(
        "teams",
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("document", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(255), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("tenant_id", "name", "version", name="pk_teams"),
    )
    if op.get_context().dialect.name != "postgresql":
        return
    op.execute("ALTER TABLE teams ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE teams FORCE ROW LEVEL SECURITY")
    rule = _TENANT_ONLY
    op.execute(f"CREATE POLICY teams_scope ON teams USING ({rule}) WITH CHECK ({rule})")


def downgrade() -> None:
    """Drop the table (its policy goes with it)."""
    op.drop_table("teams")
