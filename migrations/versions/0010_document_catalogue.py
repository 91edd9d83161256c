"""The documents catalogue (issue 15): what the web page lists; RLS per tenant on Postgres.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TENANT = "current_setting('app.tenant_id', true)"
_POLICY = "documents_tenant_isolation"


def upgrade() -> None:
    """Create documents and its index; on Postgres, turn on row-level security."""
    op.create_table(
        "documents",
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("doc_id", sa.String(64), nullable=False),
        sa.Column("source", sa.String(1024), nullable=False),
        sa.Column("title", sa.String(1024), nullable=False),
        sa.Column("acl", sa.JSON(), nullable=False),
        sa.Column("uploaded_by", sa.String(255), nullable=False),
        sa.Column("job_id", sa.String(64), nullable=False),
        sa.Column("chunks", sa.Integer(), nullable=False),
        sa.Column("size_bytes", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "doc_id", name=op.f("pk_documents")),
    )
    op.create_index("ix_documents_tenant_id_updated_at", "documents", ["tenant_id", "updated_at"])
    if op.get_context().dialect.name == "postgresql":
        op.execute("ALTER TABLE documents ENABLE ROW LEVEL SECURITY")
        op.execute("ALTER TABLE documents FORCE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY {_POLICY} ON documents"
            f" USING (tenant_id = {_TENANT}) WITH CHECK (tenant_id = {_TENANT})"
        )


def downgrade() -> None:
    """Drop the policy (Postgres), the index and the table (the chunks stay in Qdrant)."""
    if op.get_context().dialect.name == "postgresql":
        op.execute(f"DROP POLICY IF EXISTS {_POLICY} ON documents")
    op.drop_index("ix_documents_tenant_id_updated_at", table_name="documents")
    op.drop_table("documents")
