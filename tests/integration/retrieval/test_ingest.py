"""Ingestion against a real local Qdrant folder with the real MiniLM model."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from api.compose.settings import AppSettings
from retrieval.embedders.hashing import HashingEmbedder
from retrieval.errors import CollectionMismatch, StoreLocked
from retrieval.ingest import DocumentResult, prepare
from retrieval.loaders import parse
from retrieval.models import Access
from retrieval.settings import RetrievalSettings
from retrieval.stack import Retrieval, open_retrieval, qdrant_path

DOC = """# Deploying

## Redis

Run Redis 7 with append-only persistence. Sentinel or Cluster give high availability.

## Qdrant

Local mode is a brute-force scan. Use a Qdrant server past twenty thousand chunks.
"""


@pytest.fixture
def settings(make_settings: Callable[..., AppSettings]) -> RetrievalSettings:
    return make_settings(reranker="none").retrieval


@pytest.fixture
async def retrieval(settings: RetrievalSettings) -> AsyncIterator[Retrieval]:
    async with open_retrieval(settings) as r:
        yield r


async def _ingest(
    r: Retrieval, text: str, *, source: str = "deploy.md", acl: tuple[str, ...] = ()
) -> DocumentResult:
    doc = parse(text.encode(), source=source)
    return await r.ingestor.ingest(
        prepare(doc, tenant="t1", acl=list(acl), chunking=r.chunking), tenant="t1"
    )


async def _texts(r: Retrieval, query: str, groups: tuple[str, ...] = ()) -> list[str]:
    hits = await r.searcher.search(query, Access.of("t1", groups), top_k=10, method="hybrid")
    return [h.chunk.text for h in hits]


async def test_reingesting_the_same_document_changes_nothing(retrieval: Retrieval) -> None:
    first = await _ingest(retrieval, DOC)
    assert (first.chunks, first.embedded, first.deleted) == (2, 2, 0)
    again = await _ingest(retrieval, DOC)
    assert not again.changed
    assert (again.embedded, again.relabelled, again.unchanged) == (0, 0, 2)
    assert await retrieval.store.count("t1") == 2


async def test_an_edited_document_replaces_its_old_chunks(retrieval: Retrieval) -> None:
    await _ingest(retrieval, DOC)
    edited = DOC.replace("twenty thousand", "20,000").replace("## Redis", "## Broker")
    result = await _ingest(retrieval, edited)
    # Both sections changed (text, heading): two new chunks, two old ones deleted.
    assert (result.embedded, result.deleted) == (2, 2)
    assert await retrieval.store.count("t1") == 2
    texts = await _texts(retrieval, "qdrant server chunks")
    assert any("20,000" in t for t in texts) and not any("twenty" in t for t in texts)


async def test_a_shorter_version_and_an_acl_change_need_no_new_embeddings(
    retrieval: Retrieval,
) -> None:
    await _ingest(retrieval, DOC)
    shorter = DOC.split("## Qdrant")[0]
    result = await _ingest(retrieval, shorter, acl=("ops",))
    assert (result.embedded, result.relabelled, result.deleted) == (0, 1, 1)
    assert await _texts(retrieval, "redis persistence") == []  # now only for "ops"
    assert len(await _texts(retrieval, "redis persistence", ("ops",))) == 1


async def test_documents_survive_a_restart_and_the_folder_is_exclusive(
    settings: RetrievalSettings,
) -> None:
    async with open_retrieval(settings) as r:
        await _ingest(r, DOC)
        with pytest.raises(StoreLocked) as locked:
            async with open_retrieval(settings):
                pass
        assert locked.value.code == "qdrant_locked"
    assert qdrant_path(settings) == Path(settings.data_dir) / "vectors"
    async with open_retrieval(settings) as r:
        assert await r.store.count("t1") == 2
        assert "Sentinel" in (await _texts(r, "high availability sentinel"))[0]
    with pytest.raises(CollectionMismatch, match="384"):
        async with open_retrieval(settings, embedder=HashingEmbedder(32)):
            pass


async def test_removing_a_document(retrieval: Retrieval) -> None:
    await _ingest(retrieval, DOC)
    await _ingest(retrieval, "# Other\n\nSomething else entirely.", source="other.md")
    assert await retrieval.ingestor.delete("t1", "deploy.md") == 2
    assert await retrieval.store.count("t1") == 1
