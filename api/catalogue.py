"""The documents catalogue: what uploads and ``agentbus ingest`` record for the web page."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from bus.commands import IngestDoc, IngestTask
from bus.store import DocumentRecord, DocumentStore
from bus.store.repository import utcnow
from retrieval.ingest import PreparedDocument
from retrieval.jobs import publish_job

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from bus.settings import BusSettings


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


async def publish_removal(
    redis: Redis, bus: BusSettings, tenant: str, subject: str, doc: DocumentRecord
) -> str:
    """Remove a document's chunks from search, through the retrieval role; the job's id.

    Publishes an empty version of the document: storing it stores nothing and drops the
    chunks of every other version (the step that replaces an edited document). The job
    names the document by its id only (a digest): an erased user's file names do not
    travel on the bus.
    """
    removal = IngestDoc(
        doc_id=doc.doc_id,
        source=doc.doc_id,
        title="",
        version=uuid.uuid4().hex,
        acl=["*"],
        batch=0,
        batches=1,
    )
    job = await publish_job(
        redis, bus, [IngestTask(doc=removal, chunks=[])], tenant=tenant, subject=subject
    )
    return job.job_id
