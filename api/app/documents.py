"""The tenant's uploaded documents: upload, follow the ingest job, list, delete.

An upload is parsed and chunked (the ``Uploads`` port), then published as an ingest job on
the retrieval stream, exactly as ``agentbus ingest`` does: the retrieval workers embed and
store it, so the edge never opens the vector store. The catalogue row (what the web page
lists) is written when the job is published. Deleting publishes an empty version of the
document: the retrieval worker stores nothing and drops every older version's chunks (and
knowledge-graph facts), the same step that replaces an edited document.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from agentbus_contracts import Document, IngestJob, Upload
from api.app.errors import ApiError, InvalidRequest, Kind, NotFound, Unavailable
from api.catalogue import record_documents
from bus.commands import NAME_PATTERN

if TYPE_CHECKING:
    from api.app.auth import Principal
    from api.app.ports import IngestJobs, UploadedFile, Uploads
    from bus.store import DocumentStore
    from retrieval.ingest import PreparedDocument

MAX_FILES = 20
_UNSAFE = re.compile(r"[\x00-\x1f\x7f/\\]")
_JOB_ID = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


class UploadFailed(ApiError):
    """A file could not be parsed (unsupported type, unreadable bytes)."""

    code = "document_unreadable"
    kind = Kind.INVALID


def source_name(filename: str | None) -> str:
    """The file's own name (no folders, no control characters), as the document's source."""
    name = PurePosixPath((filename or "").replace("\\", "/")).name
    name = _UNSAFE.sub("_", name).strip()[:200]
    if not name:
        raise InvalidRequest("every file needs a name", field="files")
    return name


def acl_groups(acl: str | None) -> list[str]:
    """The groups of a comma-separated ACL (none: every user of the tenant reads it)."""
    groups = [g.strip() for g in (acl or "").split(",") if g.strip()]
    for group in groups:
        if not re.fullmatch(NAME_PATTERN, group) or len(group) > 64:
            raise InvalidRequest(
                f"ACL group {group[:40]!r} must be letters, digits and _.@:-", field="acl"
            )
    return groups


@dataclass(frozen=True, kw_only=True)
class Documents:
    """The documents' use cases (admin keys only: documents are shared by the whole tenant).

    Attributes:
        catalogue: the uploaded documents; None without a state store, where every use
            case but following a job answers "unavailable".
        jobs: the ingest jobs on the bus.
        uploads: parses and chunks the files.
        changed: records that a tenant's documents changed (`bus.tenant_versions.bump`),
            so every process's cached "has documents" is read again by the next run.
    """

    catalogue: DocumentStore | None
    jobs: IngestJobs
    uploads: Uploads
    changed: Callable[[str], Awaitable[None]] | None = None

    def _catalogue(self) -> DocumentStore:
        if self.catalogue is None:
            raise Unavailable("documents need a state store")
        return self.catalogue

    async def upload(
        self, admin: Principal, files: Sequence[UploadedFile], acl: str | None
    ) -> Upload:
        """Ingest the files: parse and chunk them here, store them through the retrieval role."""
        store = self._catalogue()
        if not files or len(files) > MAX_FILES:
            raise InvalidRequest(f"send 1 to {MAX_FILES} files", field="files")
        groups = acl_groups(acl)
        prepared: list[tuple[PreparedDocument, int]] = []
        for file in files:
            source = source_name(file.filename)
            data = await file.read()
            ready = await self.uploads.prepare(
                data, source=source, tenant=admin.tenant_id, acl=groups
            )
            prepared.append((ready, len(data)))
        tasks = self.uploads.split([p for p, _ in prepared])
        job = await self.jobs.publish(tasks, tenant=admin.tenant_id, subject=admin.subject)
        records = await record_documents(
            store, prepared, tenant=admin.tenant_id, subject=admin.subject, job_id=job.job_id
        )
        if self.changed is not None:  # before the upload returns: the next run sees them
            await self.changed(admin.tenant_id)
        return Upload.model_validate(
            {"job_id": job.job_id, "batches": job.total, "documents": records}
        )

    async def listing(self, admin: Principal) -> list[Document]:
        """The tenant's documents, most recently uploaded first."""
        records = await self._catalogue().list(admin.tenant_id)
        return [Document.model_validate(r) for r in records]

    async def job(self, admin: Principal, job_id: str) -> IngestJob:
        """An ingest job's progress (another tenant's job: not found)."""
        if not _JOB_ID.fullmatch(job_id):
            raise NotFound(f"no ingest job {job_id[:80]!r}")
        if await self.jobs.tenant_of(job_id) != admin.tenant_id:
            raise NotFound(f"no ingest job {job_id!r}", hint="jobs are kept for a day")
        state = await self.jobs.status(job_id)
        error, ended = await self.jobs.outcome(job_id)
        status = "error" if error else "done" if ended or state.finished else "running"
        return IngestJob(
            job_id=job_id,
            status=status,
            total=state.total,
            done=state.done,
            documents=state.documents,
            facts=state.facts,
            error=error,
        )

    async def delete(self, admin: Principal, doc_id: str) -> None:
        """Forget a document and remove its chunks from search (through the retrieval role)."""
        store = self._catalogue()
        found = await store.get(admin.tenant_id, doc_id)
        if found is None:
            raise NotFound(f"no document {doc_id[:80]!r}")
        await self.jobs.remove(admin.tenant_id, admin.subject, found)
        await store.delete(admin.tenant_id, doc_id)
        if self.changed is not None:
            await self.changed(admin.tenant_id)
