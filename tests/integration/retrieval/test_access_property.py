"""Property: a search returns exactly the chunks the caller may read, for every method.

Random corpora over a few tenants and ACL groups go into each vector store adapter (the
embedded Qdrant Edge folder, and the server adapter on qdrant-client's local mode); a
random caller searches with a query every chunk matches, so the result must be *exactly*
the readable set: nothing of another tenant, nothing outside the caller's groups, and
nothing readable missing.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrieval.ingest import indexed_text
from retrieval.models import PUBLIC, Access, StoredChunk, normalise_acl
from retrieval.ports import VectorStore
from retrieval.rerankers import make_reranker
from retrieval.search import Searcher
from retrieval.sparse import document_vector
from tests.contracts.vector_store import EMBEDDER, KINDS, open_store

TENANTS = st.sampled_from(["a", "b", "c"])
GROUPS = st.sampled_from(["g1", "g2", "g3", "g4"])
CORPUS = st.lists(st.tuples(TENANTS, st.lists(GROUPS, max_size=2)), min_size=1, max_size=12)
CALLER = st.tuples(TENANTS, st.frozensets(GROUPS, max_size=3))
METHOD = st.sampled_from(["dense", "keyword", "hybrid", "hybrid+rerank"])
_examples = itertools.count()


@pytest.fixture(params=KINDS)
async def retrieval(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Searcher]:
    store: VectorStore
    async with open_store(request.param, tmp_path / "store") as store:
        yield Searcher(store, EMBEDDER, make_reranker("none"))


def _readable(tenant: str, acl: list[str], caller: Access) -> bool:
    return tenant == caller.tenant and (PUBLIC in acl or bool(caller.groups & set(acl)))


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(corpus=CORPUS, caller=CALLER, method=METHOD)
async def test_search_returns_exactly_the_readable_chunks(
    retrieval: Searcher,
    corpus: list[tuple[str, list[str]]],
    caller: tuple[str, frozenset[str]],
    method: str,
) -> None:
    # A fresh tenant namespace per example: earlier examples' points stay in the
    # collection (more data to leak from) but can never be legitimately readable.
    ns = f"x{next(_examples)}"
    chunks = []
    for i, (tenant, groups) in enumerate(corpus):
        acl = tuple(normalise_acl(groups))
        text = f"shared harbour lighthouse note {i}"
        chunks.append(
            StoredChunk(
                id=f"00000000-0000-4000-8000-{int(ns[1:]) * 100 + i:012d}",
                tenant=f"{ns}{tenant}",
                acl=acl,
                doc_id=f"d{i}",
                version="v1",
                source=f"doc{i}.md",
                title="",
                position=0,
                heading="",
                text=text,
                content_hash="h",
            )
        )
    texts = [indexed_text(c.title, c.heading, c.text) for c in chunks]
    dense = await retrieval.embedder.embed(texts)
    await retrieval.store.upsert(chunks, dense, [document_vector(t) for t in texts])
    access = Access.of(f"{ns}{caller[0]}", caller[1])
    hits = await retrieval.search(
        "shared harbour lighthouse",
        access,
        top_k=20,
        method=method,  # type: ignore[arg-type]
    )
    got = {h.chunk.id for h in hits}
    expected = {c.id for c in chunks if _readable(c.tenant, list(c.acl), access)}
    assert got == expected
    for h in hits:
        assert h.chunk.tenant == access.tenant
        assert PUBLIC in h.chunk.acl or access.groups & set(h.chunk.acl)
