"""``/api/v1/documents``: upload files for retrieval, follow the ingest job, list, delete.

The use cases are ``api.app.documents``'s. Admin keys only: documents are shared by the
whole tenant (subject to their ACL groups).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, File, Form, Response, UploadFile, status

from agentbus_contracts import Document, IngestJob, Upload
from api.app.documents import Documents, UploadFailed
from api.app.errors import NotFound
from api.http.responses import ADMIN, errors
from api.http.routes.common import Admin, use_case

router = APIRouter(prefix="/api/v1/documents", tags=["documents"])

#: Largest upload body accepted (all files of one request together).
MAX_UPLOAD_BYTES = 20 * 1024 * 1024

_Documents = Annotated[Documents, Depends(use_case(lambda deps: deps.documents))]


@router.post(
    "",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=Upload,
    responses=errors(*ADMIN, UploadFailed),
)
async def upload(
    documents: _Documents,
    admin: Admin,
    files: Annotated[list[UploadFile], File(description="Markdown, text, HTML or PDF.")],
    acl: Annotated[
        str | None, Form(description="Comma-separated groups that may read them (none: all).")
    ] = None,
) -> Upload:
    """Ingest uploaded files: parse and chunk here, store them through the retrieval role."""
    return await documents.upload(admin, files, acl)


@router.get("", response_model=list[Document], responses=errors(*ADMIN))
async def list_documents(documents: _Documents, admin: Admin) -> list[Document]:
    """The tenant's documents, most recently uploaded first."""
    return await documents.listing(admin)


@router.get("/jobs/{job_id}", response_model=IngestJob, responses=errors(*ADMIN, NotFound))
async def job(job_id: str, documents: _Documents, admin: Admin) -> IngestJob:
    """An ingest job's progress (another tenant's job: 404)."""
    return await documents.job(admin, job_id)


@router.delete(
    "/{doc_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=errors(*ADMIN, NotFound),
)
async def delete_document(doc_id: str, documents: _Documents, admin: Admin) -> Response:
    """Forget a document and remove its chunks from search (through the retrieval role)."""
    await documents.delete(admin, doc_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
