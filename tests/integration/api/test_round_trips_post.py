"""What one ``POST /api/v1/runs`` costs in SQL statements and Redis commands, and that the
round trip it saves keeps every key check.

Not a timing test: the counts are what the request asks of the store and of Redis, whatever
the host's load (`tests.integration.agents.round_trips` counts them). The budget is
numbers; it only comes down. A change that needs more raises it in its own commit and
says why.

The POST is the benchmark's (`agentbus bench api`): a new conversation, a cached key, no
rate limit or quota (the deployment's limits are counted apart). The app runs in this
task (httpx's ASGI transport), so everything the request issues is charged to it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest
import structlog
from redis.asyncio import Redis

from api import credentials
from api.compose.edge import make_use_cases
from api.compose.settings import AppSettings
from api.http.app import create_app
from bus import keys, tenant_versions
from bus.store import KeyRole, Scope, Stores, open_store
from tests.integration.agents.round_trips import Costs, counting
from tests.sqlite_template import seed_sqlite

#: One POST that starts a conversation: (SQL statements, Redis commands, round trips).
#: SQL: none; the conversation's first turn is written by the publish script, with the run
#: (`bus.first_turns`). Redis: that script, which also checks the tenant's settings version
#: the cached key was read at (no read of its own).
BUDGET = (0, 1, 1)
#: The same with the deployment's limits on: the rate check and the quota slot add one
#: script each.
BUDGET_LIMITED = (0, 3, 3)
#: A question queued behind its conversation's first run, which is still in Redis only: the
#: first turn is adopted into SQL with the new turn (the conversation, its lock, both
#: turns, the run row). Redis: the tenant's settings version, read before anything is
#: written for a question that names a conversation (the key check), and the first turn's
#: record. With the quota off, the queued run gives back no slot (it took none).
BUDGET_QUEUED = (12, 2, 2)

QUESTION = {"question": "What is 23 × 19?", "settings": {"mode": "single"}}
Post = Callable[..., Awaitable[httpx.Response]]


class Edge:
    """An API app served in this task, and what the tests need around it."""

    def __init__(self, http: httpx.AsyncClient, stores: Stores, redis: Redis) -> None:
        self.http = http
        self.stores = stores
        self.redis = redis

    async def key(self, subject: str = "alice") -> str:
        minted = await credentials.create_key(self.stores.keys, "t1", subject, KeyRole.USER)
        return minted.key

    async def post(self, key: str, **body: Any) -> httpx.Response:
        return await self.http.post(
            "/api/v1/runs", json=QUESTION | body, headers={"Authorization": f"Bearer {key}"}
        )

    async def counted_post(self, key: str, **body: Any) -> tuple[httpx.Response, Costs]:
        """One POST, with what it issued charged to the role ``post``."""
        with structlog.contextvars.bound_contextvars(role="post"), counting() as costs:
            resp = await self.post(key, **body)
        return resp, costs


StartEdge = Callable[..., Awaitable[Edge]]


@pytest.fixture
async def start_edge(
    real_redis: Redis, make_settings: Callable[..., AppSettings]
) -> AsyncIterator[StartEdge]:
    """Call with setting overrides: the API app (no workers: runs wait at intake)."""
    exits: list[Callable[[], Awaitable[Any]]] = []

    async def start(**overrides: Any) -> Edge:
        s = make_settings(**overrides)
        await seed_sqlite(s.bus.resolved_database_url())
        store_ctx = open_store(s.bus, migrate=True)
        stores = await store_ctx.__aenter__()
        exits.append(lambda: store_ctx.__aexit__(None, None, None))
        app = create_app(make_use_cases(s, real_redis, stores))
        started, stop = asyncio.Event(), asyncio.Event()

        async def serve() -> None:  # the lifespan is entered and left in one task
            async with app.router.lifespan_context(app):
                started.set()
                await stop.wait()

        life = asyncio.create_task(serve())
        await asyncio.wait_for(started.wait(), 20)

        async def end() -> None:
            stop.set()
            await asyncio.wait_for(life, 20)

        exits.append(end)
        http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")
        exits.append(http.aclose)
        return Edge(http, stores, real_redis)

    yield start
    for close in reversed(exits):
        await close()


async def published(redis: Redis, shards: int = 1) -> int:
    """How many runs were published (each has its owner key)."""
    found = 0
    for shard in range(shards):
        found += len([k async for k in redis.scan_iter(match=keys.run_owner("*", shard))])
    return found


NO_LIMITS = {"api_rate_per_minute": 0, "api_max_active_runs": 0}


@pytest.mark.parametrize("shards", [1, 4])
async def test_a_post_that_starts_a_conversation_costs_no_more_than_its_budget(
    start_edge: StartEdge, shards: int
) -> None:
    edge = await start_edge(shards=shards, **NO_LIMITS)
    key = await edge.key()
    assert (await edge.post(key)).status_code == 202  # warmed: key cached, script loaded
    for _ in range(8 if shards > 1 else 1):  # each new conversation's id drawn anew
        resp, costs = await edge.counted_post(key)
        assert resp.status_code == 202, resp.text
        spent = costs.of(("post",))["post"]
        detail = f"{spent} {dict(costs.redis_names['post'])} {costs.sql_text['post']}"
        assert all(got <= most for got, most in zip(spent, BUDGET, strict=True)), detail


async def test_with_the_deployments_limits_a_post_costs_their_scripts_more(
    start_edge: StartEdge,
) -> None:
    edge = await start_edge()
    key = await edge.key()
    assert (await edge.post(key)).status_code == 202
    resp, costs = await edge.counted_post(key)
    assert resp.status_code == 202, resp.text
    spent = costs.of(("post",))["post"]
    detail = f"{spent} {dict(costs.redis_names['post'])} {costs.sql_text['post']}"
    assert all(got <= most for got, most in zip(spent, BUDGET_LIMITED, strict=True)), detail


async def test_a_key_deleted_after_it_was_cached_is_refused_when_it_posts(
    start_edge: StartEdge,
) -> None:
    edge = await start_edge(api_key_cache_s=300, **NO_LIMITS)
    key = await edge.key()
    assert (await edge.post(key)).status_code == 202  # cached, for five minutes
    # Deleted as an erasure deletes it, by another process: only the version tells this one.
    kid = credentials.key_id(key)
    assert kid is not None
    await edge.stores.keys.revoke(kid)
    await tenant_versions.bump(edge.redis, "t1", shards=1)

    refused = await edge.post(key)
    assert refused.status_code == 401, refused.text
    assert await published(edge.redis) == 1  # the first only


async def test_a_post_after_its_tenants_settings_changed_starts_once_and_spends_one_token(
    start_edge: StartEdge,
) -> None:
    # A burst of two: were the start that found the version moved to spend a second token
    # when it ran again, the second POST would be refused.
    edge = await start_edge(api_rate_per_minute=1, api_rate_burst=2, api_key_cache_s=300)
    key = await edge.key()
    assert (await edge.post(key)).status_code == 202
    await tenant_versions.bump(edge.redis, "t1", shards=1)  # any process's settings change

    again = await edge.post(key)
    assert again.status_code == 202, again.text
    assert await published(edge.redis) == 2
    assert (await edge.post(key)).status_code == 429  # the burst is spent: two tokens


async def test_a_shards_copy_of_the_version_left_behind_is_brought_up_by_the_first_post(
    start_edge: StartEdge,
) -> None:
    edge = await start_edge(**NO_LIMITS)
    # A version changed before copies existed: the number is 7, the shard has no copy.
    await edge.redis.set(keys.tenant_settings_version("t1"), 7)
    key = await edge.key()
    assert (await edge.post(key)).status_code == 202  # read the key again, copy raised
    assert await edge.redis.get(keys.tenant_settings_version_on("t1", 0)) == b"7"

    resp, costs = await edge.counted_post(key)
    assert resp.status_code == 202
    assert costs.of(("post",))["post"][1] <= BUDGET[1]


@pytest.mark.parametrize("shards", [1, 4])
async def test_a_question_to_a_conversation_whose_first_run_waits_queues_behind_it(
    start_edge: StartEdge, shards: int
) -> None:
    # No workers: the first run has not reached intake, SQL holds nothing of it.
    edge = await start_edge(shards=shards, **NO_LIMITS)
    key = await edge.key()
    first = (await edge.post(key)).json()
    conversation = first["conversation_id"]

    second = await edge.post(key, conversation_id=conversation)
    again = await edge.post(key, conversation_id=conversation)

    assert second.status_code == again.status_code == 202, second.text
    assert second.json()["queued"] is True and second.json()["ahead"] == 1
    assert again.json()["queued"] is True and again.json()["ahead"] == 2
    assert await published(edge.redis, shards) == 1  # the first only: the others wait
    assert edge.stores.turns is not None
    waiting = await edge.stores.turns.waiting(Scope.user("t1", "alice"), conversation)
    assert [(t.run_id, t.state.value) for t in waiting] == [
        (first["run_id"], "running"),
        (second.json()["run_id"], "queued"),
        (again.json()["run_id"], "queued"),
    ]


async def test_another_users_question_to_a_conversation_whose_first_run_waits_is_not_found(
    start_edge: StartEdge,
) -> None:
    edge = await start_edge(**NO_LIMITS)
    alice, bob = await edge.key("alice"), await edge.key("bob")
    conversation = (await edge.post(alice)).json()["conversation_id"]

    refused = await edge.post(bob, conversation_id=conversation)
    mine = await edge.post(alice, conversation_id=conversation)

    assert refused.status_code == 404, refused.text
    assert refused.json()["error"]["code"] == "conversation_not_found"
    assert mine.status_code == 202 and mine.json()["ahead"] == 1  # bob took nothing of it


async def test_a_rejecting_question_to_a_conversation_whose_first_run_waits_is_busy(
    start_edge: StartEdge,
) -> None:
    edge = await start_edge(**NO_LIMITS)
    key = await edge.key()
    conversation = (await edge.post(key)).json()["conversation_id"]

    busy = await edge.post(key, conversation_id=conversation, settings={"multitask": "reject"})

    assert busy.status_code == 409, busy.text
    assert busy.json()["error"]["code"] == "conversation_busy"
    assert await published(edge.redis) == 1


async def test_a_question_queued_behind_a_conversations_first_run_costs_its_budget(
    start_edge: StartEdge,
) -> None:
    edge = await start_edge(**NO_LIMITS)
    key = await edge.key()
    conversation = (await edge.post(key)).json()["conversation_id"]
    resp, costs = await edge.counted_post(key, conversation_id=conversation)
    assert resp.status_code == 202 and resp.json()["queued"] is True, resp.text
    spent = costs.of(("post",))["post"]
    detail = f"{spent} {dict(costs.redis_names['post'])} {costs.sql_text['post']}"
    assert all(got <= most for got, most in zip(spent, BUDGET_QUEUED, strict=True)), detail
