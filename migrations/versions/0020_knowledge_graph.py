"""The knowledge graph: facts extracted from document chunks at ingest, per tenant.

``kg_chunks`` holds the chunks facts came from (the passages a graph query returns),
``kg_facts`` the (subject, relation, object) facts with their normalised ends, ``kg_acl``
the ACL groups of each stored document version. Every row carries the tenant and the
document version; on Postgres each table gets the tenant policy of the documents
catalogue (migration 0010).

Revision ID: 0020
Revises: 0019
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | Sequence[str] | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TENANT = "current_setting('app.tenant_id', true)"
_TABLES = ("kg_chunks", "kg_facts", "kg_acl")


def upgrade() -> None:
    """Create the three tables and their indexes; on Postgres, their tenant policies."""
    op.create_table(
        "kg_chunks",
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("chunk_id", sa.String(64), nullable=False),
        sa.Column("version", sa.String(64), nullable=False),
        sa.Column("doc_id", sa.String(64), nullable=False),
        sa.Column("source", sa.String(2048), nullable=False),
        sa.Column("title", sa.String(1024), nullable=False),
        sa.Column("heading", sa.String(1024), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "chunk_id", "version", name=op.f("pk_kg_chunks")),
    )
    op.create_index("ix_kg_chunks_tenant_id_doc_id", "kg_chunks", ["tenant_id", "doc_id"])
    op.create_table(
        "kg_facts",
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("chunk_id", sa.String(64), nullable=False),
        sa.Column("version", sa.String(64), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("doc_id", sa.String(64), nullable=False),
        sa.Column("subject", sa.String(255), nullable=False),
        sa.Column("subject_key", sa.String(255), nullable=False),
        sa.Column("subject_kind", sa.String(16), nullable=False),
        sa.Column("relation", sa.String(255), nullable=False),
        sa.Column("object", sa.String(255), nullable=False),
        sa.Column("object_key", sa.String(255), nullable=False),
        sa.Column("object_kind", sa.String(16), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "chunk_id", "version", "n", name=op.f("pk_kg_facts")),
    )
    op.create_index("ix_kg_facts_tenant_id_subject_key", "kg_facts", ["tenant_id", "subject_key"])
    op.create_index("ix_kg_facts_tenant_id_object_key", "kg_facts", ["tenant_id", "object_key"])
    op.create_index("ix_kg_facts_tenant_id_doc_id", "kg_facts", ["tenant_id", "doc_id"])
    op.create_table(
        "kg_acl",
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("doc_id", sa.String(64), nullable=False),
        sa.Column("version", sa.String(64), nullable=False),
        sa.Column("grp", sa.String(128), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "doc_id", "version", "grp", name=op.f("pk_kg_acl")),
    )
    if op.get_context().dialect.name != "postgresql":
        return
    for table in _TABLES:
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY {table}_tenant_isolation ON {table}"
            f" USING (tenant_id = {_TENANT}) WITH CHECK (tenant_id = {_TENANT})"
        )


def downgrade() -> None:
    """Drop the tables (their indexes and policies go with them)."""
    for table in reversed(_TABLES):
        op.drop_table(table)
