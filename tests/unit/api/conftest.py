"""Relay tests run twice: on fakeredis and on the real test Redis (``connected``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis

from tests.conftest import fake_client, real_client


@pytest.fixture(params=["fake", pytest.param("real", marks=pytest.mark.connected)])
async def redis(request: pytest.FixtureRequest) -> AsyncIterator[Redis]:
    """The Redis the relay reads."""
    client = fake_client() if request.param == "fake" else real_client()
    async with client as r:
        yield r
