"""What the API returns, as the client hands it back (unknown fields are ignored, so a newer
server does not break an older client). Run events are the models of ``bus.events``."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

TERMINAL = frozenset({"done", "error", "timeout", "cancelled", "rejected"})


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class Started(_Model):
    """A run the API accepted; follow it with ``join(run_id)``."""

    run_id: str
    conversation_id: str
    status: str = "queued"
    replayed: bool = False


class Run(_Model):
    """A run as stored: status, answer, trace and usage."""

    id: str
    status: str
    mode: str | None = None
    question: str | None = None
    answer: str | None = None
    error_code: str | None = None
    conversation_id: str | None = None
    created_at: datetime | None = None
    finished_at: datetime | None = None
    trace: list[dict[str, Any]] | None = None
    usage: dict[str, int] | None = None
    partial: bool = False
    """The run ended other than ``done``: ``answer`` is None, ``partial_answer`` its draft."""
    partial_answer: str | None = None

    @property
    def finished(self) -> bool:
        """Whether the run has ended (it will not change any more)."""
        return self.status in TERMINAL


class RunPage(_Model):
    """One page of runs, newest first; pass ``next_before`` as ``before`` for the next."""

    runs: list[Run]
    next_before: str | None = None


class Snapshot(_Model):
    """Sent instead of events a join missed when they were trimmed away: the run as stored."""

    type: Literal["snapshot"] = "snapshot"
    run_id: str
    last_event_id: str
    run: Run


class Conversation(_Model):
    """A conversation (its messages come with ``get_conversation``)."""

    id: str
    subject: str | None = None
    title: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None


class Message(_Model):
    """One message of a conversation."""

    role: str
    content: str
    run_id: str | None = None
    created_at: datetime | None = None


class ConversationDetail(_Model):
    """A conversation and its latest messages, oldest first."""

    conversation: Conversation
    messages: list[Message]


class Document(_Model):
    """A document of the tenant's catalogue (its chunks are in the vector store)."""

    doc_id: str
    source: str
    title: str
    acl: list[str] = []
    uploaded_by: str | None = None
    job_id: str | None = None
    chunks: int = 0
    size_bytes: int = 0
    created_at: datetime | None = None
    updated_at: datetime | None = None


class Upload(_Model):
    """Files accepted for ingestion; follow the job with ``document_job(job_id)``."""

    job_id: str
    batches: int
    documents: list[Document]


class IngestJob(_Model):
    """An ingest job's progress (``running``, ``done`` or ``error``)."""

    job_id: str
    status: str
    total: int
    done: int
    documents: int
    error: str | None = None


class TenantSettings(_Model):
    """The tenant's stored preferences, the deployment defaults and the overlay of both."""

    tenant_id: str
    preferences: dict[str, Any]
    defaults: dict[str, Any]
    effective: dict[str, Any]
    updated_by: str | None = None


class WebhookSecret(_Model):
    """The tenant's webhook signing secret (``whsec_...``)."""

    secret: str
    created_at: datetime


class Delivery(_Model):
    """One webhook message of a run and where its delivery stands."""

    id: str
    type: str
    url: str
    status: str
    attempts: int
    created_at: datetime
    next_attempt_at: datetime | None = None
    last_attempt_at: datetime | None = None
    last_status_code: int | None = None
    last_error: str | None = None
    delivered_at: datetime | None = None
