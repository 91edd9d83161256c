"""The knowledge-graph tables: facts extracted from document chunks, and those chunks.

Kept apart from ``bus.store.tables`` (same ``Base``, same metadata) like the document
catalogue; ``bus.store`` imports it, so alembic and the ORM always see it. Every row
carries the tenant (row-level security on Postgres, migration 0018) and the document
version it came from, so a new version replaces an old one by a delete of the others.
Read ``bus.store.facts`` for how rows are written and read.
"""

from __future__ import annotations

from sqlalchemy import Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from bus.store.tables import Base


class FactChunkRow(Base):
    """A chunk some fact came from: the passage a graph query returns."""

    __tablename__ = "kg_chunks"
    __table_args__ = (Index("ix_kg_chunks_tenant_id_doc_id", "tenant_id", "doc_id"),)

    tenant_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    chunk_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    version: Mapped[str] = mapped_column(String(64), primary_key=True)
    doc_id: Mapped[str] = mapped_column(String(64))
    source: Mapped[str] = mapped_column(String(2048))
    title: Mapped[str] = mapped_column(String(1024))
    heading: Mapped[str] = mapped_column(String(1024))
    position: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)


class FactRow(Base):
    """One (subject, relation, object) fact of a chunk, its ends normalised for matching."""

    __tablename__ = "kg_facts"
    __table_args__ = (
        Index("ix_kg_facts_tenant_id_subject_key", "tenant_id", "subject_key"),
        Index("ix_kg_facts_tenant_id_object_key", "tenant_id", "object_key"),
        Index("ix_kg_facts_tenant_id_doc_id", "tenant_id", "doc_id"),
    )

    tenant_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    chunk_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    version: Mapped[str] = mapped_column(String(64), primary_key=True)
    n: Mapped[int] = mapped_column(Integer, primary_key=True)
    doc_id: Mapped[str] = mapped_column(String(64))
    subject: Mapped[str] = mapped_column(String(255))
    subject_key: Mapped[str] = mapped_column(String(255))
    subject_kind: Mapped[str] = mapped_column(String(16))
    relation: Mapped[str] = mapped_column(String(255))
    object: Mapped[str] = mapped_column(String(255))
    object_key: Mapped[str] = mapped_column(String(255))
    object_kind: Mapped[str] = mapped_column(String(16))


class FactAclRow(Base):
    """One ACL group of a document version whose facts are stored (``*``: everyone)."""

    __tablename__ = "kg_acl"

    tenant_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    doc_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    version: Mapped[str] = mapped_column(String(64), primary_key=True)
    grp: Mapped[str] = mapped_column(String(128), primary_key=True)
