"""The ``Uploads`` port over the retrieval's loaders, chunker and job splitter."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from api.app.documents import UploadFailed
from bus.commands import IngestTask
from retrieval.errors import RetrievalError
from retrieval.ingest import PreparedDocument, prepare
from retrieval.jobs import split_tasks
from retrieval.loaders import parse
from retrieval.settings import RetrievalSettings
from retrieval.stack import chunking_config


@dataclass(frozen=True, slots=True)
class RetrievalUploads:
    """Parses and chunks uploads as ``agentbus ingest`` does, in batches one message holds.

    Attributes:
        retrieval: the chunking and batching settings.
        max_message_bytes: the largest message on the bus.
    """

    retrieval: RetrievalSettings
    max_message_bytes: int

    async def prepare(
        self, data: bytes, *, source: str, tenant: str, acl: Sequence[str]
    ) -> PreparedDocument:
        """The file parsed (off the event loop) and chunked."""
        try:
            # Parsing a PDF is CPU work: off the event loop that serves every client.
            doc = await asyncio.to_thread(parse, data, source=source)
        except RetrievalError as e:
            raise UploadFailed(f"{source}: {e.message}", hint=e.hint, field="files") from e
        return prepare(doc, tenant=tenant, acl=acl, chunking=chunking_config(self.retrieval))

    def split(self, docs: Sequence[PreparedDocument]) -> list[IngestTask]:
        """The documents' chunks in tasks of at most the configured batch and message size."""
        return split_tasks(
            docs,
            batch_chunks=self.retrieval.ingest_batch_chunks,
            max_bytes=self.max_message_bytes,
        )
