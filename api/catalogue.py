"""The documents catalogue: what uploads and ``agentbus ingest`` record for the web page."""

from __future__ import annotations

from collections.abc import Sequence

from bus.store import DocumentRecord, DocumentStore
from bus.store.repository import utcnow
from retrieval.ingest import PreparedDocument


async def record_documents(
    store: DocumentStore,
    docs: Sequence[tuple[PreparedDocument, int]],
    *,
    tenant: str,
    subject: str,
    job_id: str,
) -> list[DocumentRecord]:
    """Record each (prepared document, size in bytes) of an ingest job; returns the rows."""
    now = utcnow()
    return [
        await store.put(
            DocumentRecord(
                tenant_id=tenant,
                doc_id=doc.doc_id,
                source=doc.source[:1024],
                title=doc.title[:1024],
                acl=doc.acl,
                uploaded_by=subject,
                job_id=job_id,
                chunks=len(doc.chunks),
                size_bytes=size,
                created_at=now,
                updated_at=now,
            )
        )
        for doc, size in docs
    ]
