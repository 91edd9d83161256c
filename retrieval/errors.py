"""Errors raised by the retrieval package: one root class, each with a stable code and a hint.

Codes are part of the contract (the CLI prints them, the API maps them): never reword them.
"""

from __future__ import annotations

from bus.errors import CodedError


class RetrievalError(CodedError):
    """Root of every error the retrieval package raises.

    Attributes:
        code: a stable, machine-readable code.
        hint: what the user or operator should do about it.
    """

    code = "retrieval_error"
    hint = ""


class ConfigError(RetrievalError):
    """A retrieval setting is missing or inconsistent."""

    code = "retrieval_config"
    hint = "check the AGENTBUS_EMBEDDER / AGENTBUS_EMBEDDING_* / AGENTBUS_RERANKER settings"


class UnsupportedDocument(RetrievalError):
    """A file's type is not one ingestion reads."""

    code = "unsupported_document"
    hint = "ingest Markdown (.md), text (.txt), HTML (.html/.htm) or PDF (.pdf) files"


class DocumentUnreadable(RetrievalError):
    """A file could not be read or parsed (corrupt PDF, bad encoding...)."""

    code = "document_unreadable"
    hint = "check the file opens in a viewer; PDFs that are scanned images have no text"


class EmbedderUnavailable(RetrievalError):
    """The embedding model could not be loaded (a package or file is missing)."""

    code = "embedder_unavailable"
    hint = "reinstall agentbus with its dependencies (make install)"


class EmbedderFailed(RetrievalError):
    """An embedding call failed or returned something unusable."""

    code = "embedder_failed"
    hint = "check the embeddings endpoint, its model name and AGENTBUS_EMBEDDING_DIM"


class RerankerUnavailable(RetrievalError):
    """The reranker package could not be loaded."""

    code = "reranker_unavailable"
    hint = (
        "install it (pip install nanoranker onnxruntime-extensions) or set AGENTBUS_RERANKER=none"
    )


class StoreLocked(RetrievalError):
    """The embedded vector store's folder is open in another process (it takes a lock)."""

    code = "qdrant_locked"
    hint = (
        "one process owns the embedded vector store: run the retrieval role there only "
        "(`agentbus up` does); every other process reaches it over the bus. For several "
        "retrieval processes, point AGENTBUS_QDRANT_URL at a Qdrant server"
    )


class SearchUnanswered(RetrievalError):
    """A search sent over the bus got no reply in time."""

    code = "retrieval_unavailable"
    hint = "check that a retrieval worker runs (`agentbus up` or `agentbus worker retrieval`)"


class StoreUnavailable(RetrievalError):
    """The vector store could not be reached or refused a request."""

    code = "qdrant_unavailable"
    hint = "check AGENTBUS_QDRANT_URL and that the Qdrant server is up"


class CollectionMismatch(RetrievalError):
    """The collection exists with another vector size than the embedder produces."""

    code = "collection_mismatch"
    hint = (
        "the embedder changed: use a new AGENTBUS_QDRANT_COLLECTION (and re-ingest), "
        "or switch back to the embedder the collection was built with"
    )
