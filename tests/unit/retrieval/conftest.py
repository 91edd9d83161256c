"""Fixtures for retrieval tests: a real local Qdrant folder with a model-free embedder."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from api.compose.settings import AppSettings
from retrieval.embedders.hashing import HashingEmbedder
from retrieval.ingest import DocumentResult, prepare
from retrieval.loaders import parse
from retrieval.stack import Retrieval, open_retrieval


@pytest.fixture
async def retrieval(make_settings: Callable[..., AppSettings]) -> AsyncIterator[Retrieval]:
    """Retrieval on a local Qdrant folder under tmp_path (hashing embedder: fast)."""
    settings = make_settings(embedder="hashing", reranker="none", chunk_max_chars=300)
    async with open_retrieval(settings.retrieval, embedder=HashingEmbedder(64)) as r:
        yield r


async def add(
    r: Retrieval, source: str, text: str, *, tenant: str = "t1", acl: Any = ()
) -> DocumentResult:
    """Ingest one Markdown document in-process."""
    doc = parse(text.encode(), source=source, kind="markdown")
    prepared = prepare(doc, tenant=tenant, acl=list(acl), chunking=r.chunking)
    return await r.ingestor.ingest(prepared, tenant=tenant)
