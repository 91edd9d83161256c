"""What one ``POST /api/v1/runs`` costs the API in SQL statements and Redis commands.

Not a timing test: the counts are what the request asks of the store and of Redis,
whatever the host's load. The budget is numbers; it only comes down. A change that needs
more raises it in its own commit and says why.

The edge runs alone (no workers take the run): what is counted is the request's own work,
for a user key whose caches are warm (a first POST filled them), as under load.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from typing import Any

import httpx
import pytest
from redis.asyncio import Redis

from api import credentials
from api.compose.edge import run_edge
from api.compose.settings import AppSettings
from bus.store import KeyRole, open_store
from tests.integration.agents.round_trips import counting

#: One POST of a warmed user key, single mode, no conversation, no idempotency key:
#: (SQL statements, Redis commands, Redis round trips). SQL: the conversation's owner and
#: the run's turn, in one transaction. Redis: the tenant's settings version (the cached
#: key), the rate limit, the quota slot, the publish script. (The user's memories mark is
#: cached beside that version: the writer of a user's first memory bumps it.)
POST_BUDGET = (2, 4, 4)
#: Commands of the edge's background loops (the admission consumer's blocking reads),
#: which run while the request does and are no part of it.
BACKGROUND = frozenset({"XREADGROUP", "XREAD", "XAUTOCLAIM", "XCLAIM"})


@pytest.fixture
async def edge(
    real_redis: Redis, make_settings: Callable[..., AppSettings]
) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    """An API server alone on a real Redis and SQLite, and a user key."""
    s = make_settings()
    async with AsyncExitStack() as stack:
        stores = await stack.enter_async_context(open_store(s.bus, migrate=True))
        stop = asyncio.Event()
        port: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(
            run_edge(
                s, real_redis, stores, stop, host="127.0.0.1", port=0, on_started=port.set_result
            )
        )
        bound = await asyncio.wait_for(port, 20)
        minted = await credentials.create_key(stores.keys, "t1", "alice", KeyRole.USER)
        client = await stack.enter_async_context(
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{bound}", timeout=20)
        )
        client.headers["Authorization"] = f"Bearer {minted.key}"
        try:
            yield client, minted.key
        finally:
            stop.set()
            await asyncio.wait_for(task, 20)


async def post(client: httpx.AsyncClient, question: str) -> dict[str, Any]:
    response = await client.post("/api/v1/runs", json={"question": question})
    assert response.status_code == 202, response.text
    return response.json()


async def test_a_post_costs_no_more_than_its_budget(edge: tuple[httpx.AsyncClient, str]) -> None:
    client, _ = edge
    await post(client, "What is 23 × 19?")  # warmed: key, settings and sources cached
    with counting() as costs:
        started = await post(client, "What is 17 × 3?")
    assert started["run_id"]
    sql = sum(costs.sql.values())
    background = sum(n for c in costs.redis_names.values() for k, n in c.items() if k in BACKGROUND)
    commands = sum(costs.redis.values()) - background
    trips = sum(costs.redis_trips.values()) - background
    names = {role: dict(n) for role, n in costs.redis_names.items()}
    print(f"POST sql={sql} redis={commands} trips={trips} {names} {dict(costs.sql_text)}")
    within = all(got <= most for got, most in zip((sql, commands, trips), POST_BUDGET, strict=True))
    assert within, f"a POST cost sql={sql} redis={commands} trips={trips}, budget {POST_BUDGET}"
