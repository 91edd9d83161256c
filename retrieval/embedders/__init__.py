"""Embedder adapters (the port is `retrieval.ports.Embedder`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrieval.errors import ConfigError
from retrieval.ports import Embedder

if TYPE_CHECKING:
    from retrieval.settings import RetrievalSettings


def make_embedder(settings: RetrievalSettings) -> Embedder:
    """The embedder the settings choose (models load lazily, on first use).

    Raises:
        ConfigError: ``openai`` without its base URL, model and vector size.
    """
    if settings.embedder == "hashing":
        from retrieval.embedders.hashing import HashingEmbedder

        return HashingEmbedder(settings.embedding_dim or 384)
    if settings.embedder == "openai":
        from retrieval.embedders.openai_compat import OpenAIEmbedder

        key = settings.embedding_api_key
        return OpenAIEmbedder(
            settings.embedding_base_url or "",
            settings.embedding_model or "",
            settings.embedding_dim or 0,
            api_key=key.get_secret_value() if key else None,
        )
    if settings.embedder == "local":
        from retrieval.embedders.local_onnx import MiniLMEmbedder

        return MiniLMEmbedder()
    raise ConfigError(f"unknown embedder {settings.embedder!r}")
