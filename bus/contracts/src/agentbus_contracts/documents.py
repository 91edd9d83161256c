"""The tenant's documents: the catalogue, an upload, an ingest job's progress."""

from __future__ import annotations

from datetime import datetime

from agentbus_contracts.base import View


class Document(View):
    """A document of the tenant's catalogue (its chunks are in the vector store)."""

    tenant_id: str
    doc_id: str
    source: str
    title: str
    acl: list[str] = []
    uploaded_by: str
    job_id: str
    chunks: int
    size_bytes: int
    created_at: datetime
    updated_at: datetime


class Upload(View):
    """Files accepted for ingestion; follow the job at ``/api/v1/documents/jobs/{job_id}``
    (the client's ``document_job(job_id)``)."""

    job_id: str
    batches: int
    documents: list[Document]


class IngestJob(View):
    """An ingest job's progress (``status``: running, done or error)."""

    job_id: str
    status: str
    total: int
    done: int
    documents: int
    facts: int = 0
    """Knowledge-graph facts extracted from the job's chunks so far."""
    error: str | None = None
