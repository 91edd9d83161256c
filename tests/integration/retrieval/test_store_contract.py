"""Every vector store adapter passes the vector store contract suite
(`tests.contracts.vector_store`): Qdrant Edge, qdrant-client's local mode, and a Qdrant server
when ``AGENTBUS_TEST_QDRANT_URL`` names one."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from retrieval.ports import VectorStore
from tests.contracts.vector_store import QDRANT_URL, VectorStoreContract, open_store


class TestEdgeStore(VectorStoreContract):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[VectorStore]:
        async with open_store("edge", tmp_path / "store") as s:
            yield s


class TestQdrantLocalMode(VectorStoreContract):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[VectorStore]:
        async with open_store("qdrant-local", tmp_path / "store") as s:
            yield s


if QDRANT_URL:  # defined only when a server is named: no skip, and a named one must answer

    class TestQdrantServer(VectorStoreContract):
        @pytest.fixture
        async def store(self, tmp_path: Path) -> AsyncIterator[VectorStore]:
            async with open_store("qdrant-server", tmp_path / "store") as s:
                yield s


def test_the_suite_has_tests() -> None:
    assert len([n for n in dir(VectorStoreContract) if n.startswith("test_")]) >= 8
