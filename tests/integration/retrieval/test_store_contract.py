"""Every vector store adapter passes the store contract suite (`store_contract`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from retrieval.ports import VectorStore
from tests.integration.retrieval import store_contract
from tests.integration.retrieval.store_contract import KINDS, open_store

CHECKS: dict[str, Callable[[VectorStore], Awaitable[None]]] = {
    name.removeprefix("check_"): getattr(store_contract, name)
    for name in dir(store_contract)
    if name.startswith("check_")
}


@pytest.fixture(params=KINDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[VectorStore]:
    async with open_store(request.param, tmp_path / "store") as s:
        yield s


@pytest.mark.parametrize("check", sorted(CHECKS))
async def test_store_contract(store: VectorStore, check: str) -> None:
    await CHECKS[check](store)


def test_the_suite_has_checks() -> None:
    assert len(CHECKS) >= 8
