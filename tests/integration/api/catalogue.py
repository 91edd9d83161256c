"""A document in a tenant's catalogue, as an ingest leaves it (what the starter checks)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bus.store import DocumentRecord


async def catalogue_a_document(api: Any, tenant_id: str = "t1", uploaded_by: str = "root") -> None:
    """Put one catalogue entry for ``tenant_id`` (no chunks need exist for the starter)."""
    now = datetime.now(UTC)
    assert api.stores.documents is not None
    await api.stores.documents.put(
        DocumentRecord(
            tenant_id=tenant_id,
            doc_id="d1",
            source="handbook.md",
            title="Handbook",
            uploaded_by=uploaded_by,
            job_id="j1",
            chunks=1,
            size_bytes=10,
            created_at=now,
            updated_at=now,
        )
    )
