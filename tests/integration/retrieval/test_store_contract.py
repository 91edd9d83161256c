"""Every vector store adapter passes the vector store contract suite
(`tests.contracts.vector_store`): Qdrant Edge, qdrant-client's local mode, and a Qdrant server
when ``AGENTBUS_TEST_QDRANT_URL`` names one."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from retrieval.edge_store import EdgeStore
from retrieval.ports import VectorStore
from retrieval.store import QdrantStore
from tests.contracts.vector_store import QDRANT_URL, VectorStoreContract, on_server, ready


class TestEdgeStore(VectorStoreContract):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[VectorStore]:
        async with ready(await EdgeStore.open(tmp_path / "store", "chunks")) as s:
            yield s


class TestQdrantLocalMode(VectorStoreContract):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[VectorStore]:
        async with ready(await QdrantStore.open("chunks", path=tmp_path / "store")) as s:
            yield s


if QDRANT_URL:  # defined only when a server is named: no skip, and a named one must answer

    class TestQdrantServer(VectorStoreContract):
        @pytest.fixture
        async def store(self) -> AsyncIterator[VectorStore]:
            server, collection = await on_server()
            async with ready(server, drop=collection) as s:
                yield s


def test_the_suite_has_tests() -> None:
    assert len([n for n in dir(VectorStoreContract) if n.startswith("test_")]) >= 8
