"""``/api/v1/documents``: upload files for retrieval, follow the ingest job, list, delete.

An upload is parsed and chunked here, then published as an ingest job on the retrieval
stream (``retrieval.jobs``), exactly as ``agentbus ingest`` does: the retrieval workers
embed and store it, so the API never opens the vector store. The catalogue row (what the
page lists) is written when the job is published. Deleting publishes an empty version of
the document: the retrieval worker stores nothing and drops every older version's chunks
(and knowledge-graph facts), the same step that replaces an edited document. Admin keys
only: documents are shared by the whole tenant (subject to their ACL groups).
"""

from __future__ import annotations

import asyncio
import re
from pathlib import PurePosixPath
from typing import Annotated

from fastapi import APIRouter, File, Form, Response, UploadFile, status

from agentbus_contracts import Document, IngestJob, Upload
from api.app.errors import ApiError, InvalidRequest, Kind, NotFound, Unavailable
from api.catalogue import record_documents
from api.http.responses import ADMIN, errors
from api.http.routes.common import Admin, Deps
from bus.commands import NAME_PATTERN
from bus.store import DocumentStore
from retrieval.errors import RetrievalError
from retrieval.ingest import PreparedDocument, prepare
from retrieval.jobs import split_tasks
from retrieval.loaders import parse
from retrieval.stack import chunking_config

router = APIRouter(prefix="/api/v1/documents", tags=["documents"])

#: Largest upload body accepted (all files of one request together).
MAX_UPLOAD_BYTES = 20 * 1024 * 1024
MAX_FILES = 20
_UNSAFE = re.compile(r"[\x00-\x1f\x7f/\\]")


class UploadFailed(ApiError):
    """A file could not be parsed (unsupported type, unreadable bytes)."""

    code = "document_unreadable"
    kind = Kind.INVALID


def _catalogue(deps: Deps) -> DocumentStore:
    if deps.documents is None:
        raise Unavailable("documents need a state store")
    return deps.documents


def _source_name(filename: str | None) -> str:
    """The file's own name (no folders, no control characters), as the document's source."""
    name = PurePosixPath((filename or "").replace("\\", "/")).name
    name = _UNSAFE.sub("_", name).strip()[:200]
    if not name:
        raise InvalidRequest("every file needs a name", field="files")
    return name


def _groups(acl: str | None) -> list[str]:
    groups = [g.strip() for g in (acl or "").split(",") if g.strip()]
    for group in groups:
        if not re.fullmatch(NAME_PATTERN, group) or len(group) > 64:
            raise InvalidRequest(
                f"ACL group {group[:40]!r} must be letters, digits and _.@:-", field="acl"
            )
    return groups


@router.post(
    "",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=Upload,
    responses=errors(*ADMIN, UploadFailed),
)
async def upload(
    deps: Deps,
    admin: Admin,
    files: Annotated[list[UploadFile], File(description="Markdown, text, HTML or PDF.")],
    acl: Annotated[
        str | None, Form(description="Comma-separated groups that may read them (none: all).")
    ] = None,
) -> Upload:
    """Ingest uploaded files: parse and chunk here, store them through the retrieval role."""
    store = _catalogue(deps)
    if not files or len(files) > MAX_FILES:
        raise InvalidRequest(f"send 1 to {MAX_FILES} files", field="files")
    groups = _groups(acl)
    chunking = chunking_config(deps.retrieval)
    prepared: list[tuple[PreparedDocument, int]] = []
    for upload_file in files:
        source = _source_name(upload_file.filename)
        data = await upload_file.read()
        try:
            # Parsing a PDF is CPU work: off the event loop that serves every client.
            doc = await asyncio.to_thread(parse, data, source=source)
        except RetrievalError as e:
            raise UploadFailed(f"{source}: {e.message}", hint=e.hint, field="files") from e
        ready = prepare(doc, tenant=admin.tenant_id, acl=groups, chunking=chunking)
        prepared.append((ready, len(data)))
    tasks = split_tasks(
        [p for p, _ in prepared],
        batch_chunks=deps.retrieval.ingest_batch_chunks,
        max_bytes=deps.bus.max_message_bytes,
    )
    job = await deps.ingest_jobs.publish(tasks, tenant=admin.tenant_id, subject=admin.subject)
    records = await record_documents(
        store, prepared, tenant=admin.tenant_id, subject=admin.subject, job_id=job.job_id
    )
    return Upload.model_validate({"job_id": job.job_id, "batches": job.total, "documents": records})


@router.get("", response_model=list[Document], responses=errors(*ADMIN))
async def list_documents(deps: Deps, admin: Admin) -> list[Document]:
    """The tenant's documents, most recently uploaded first."""
    records = await _catalogue(deps).list(admin.tenant_id)
    return [Document.model_validate(r) for r in records]


@router.get("/jobs/{job_id}", response_model=IngestJob, responses=errors(*ADMIN, NotFound))
async def job(job_id: str, deps: Deps, admin: Admin) -> IngestJob:
    """An ingest job's progress (another tenant's job: 404)."""
    if not re.fullmatch(r"[A-Za-z0-9_.:-]{1,64}", job_id):
        raise NotFound(f"no ingest job {job_id[:80]!r}")
    if await deps.ingest_jobs.tenant_of(job_id) != admin.tenant_id:
        raise NotFound(f"no ingest job {job_id!r}", hint="jobs are kept for a day")
    state = await deps.ingest_jobs.status(job_id)
    error, ended = await deps.ingest_jobs.outcome(job_id)
    status_ = "error" if error else "done" if ended or state.finished else "running"
    return IngestJob(
        job_id=job_id,
        status=status_,
        total=state.total,
        done=state.done,
        documents=state.documents,
        facts=state.facts,
        error=error,
    )


@router.delete(
    "/{doc_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=errors(*ADMIN, NotFound),
)
async def delete_document(doc_id: str, deps: Deps, admin: Admin) -> Response:
    """Forget a document and remove its chunks from search (through the retrieval role)."""
    store = _catalogue(deps)
    found = await store.get(admin.tenant_id, doc_id)
    if found is None:
        raise NotFound(f"no document {doc_id[:80]!r}")
    await deps.ingest_jobs.remove(admin.tenant_id, admin.subject, found)
    await store.delete(admin.tenant_id, doc_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
