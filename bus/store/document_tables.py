"""The table of a tenant's documents: what was uploaded, by whom, under which ACL groups.

The chunks themselves live in the vector store; this is the catalogue the web page lists
and deletes from. Kept apart from ``bus.store.tables`` like ``gate_tables``.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from bus.store.tables import Base, UTCDateTime


class DocumentRow(Base):
    """One document of a tenant (its latest upload); on Postgres, tenant-isolated by RLS."""

    __tablename__ = "documents"
    __table_args__ = (Index("ix_documents_tenant_id_updated_at", "tenant_id", "updated_at"),)

    tenant_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    doc_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    source: Mapped[str] = mapped_column(String(1024))
    title: Mapped[str] = mapped_column(String(1024))
    acl: Mapped[list[str]] = mapped_column(JSON())
    uploaded_by: Mapped[str] = mapped_column(String(255))
    job_id: Mapped[str] = mapped_column(String(64))
    chunks: Mapped[int] = mapped_column(Integer)
    size_bytes: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
