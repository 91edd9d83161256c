"""Searches over the bus (fakeredis and a real Redis): a process without the vector store
asks the retrieval role, which filters by the command's tenant and groups."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest
from redis.asyncio import Redis

from agents.roles.gather import make_retrieval_router
from api.compose.settings import AppSettings
from bus import keys, wire
from bus.commands import Command, SearchTask, deadline_in
from bus.runtime.worker import Worker
from retrieval.embedders.hashing import HashingEmbedder
from retrieval.errors import SearchUnanswered
from retrieval.models import Access
from retrieval.remote import RemoteSearch, ReplyHit, SearchReply, make_search_handler, reply_key
from retrieval.stack import Retrieval, open_retrieval
from tests.conftest import fake_client, real_client
from tests.support import running
from tests.unit.retrieval.conftest import add


@pytest.fixture(params=["fake", pytest.param("real", marks=pytest.mark.connected)])
async def redis(request: pytest.FixtureRequest) -> AsyncIterator[Redis]:
    client = fake_client() if request.param == "fake" else real_client()
    async with client as r:
        yield r


@pytest.fixture
def settings(make_settings: Callable[..., AppSettings]) -> AppSettings:
    return make_settings(reranker="none")


@pytest.fixture
async def retrieval(settings: AppSettings) -> AsyncIterator[Retrieval]:
    async with open_retrieval(settings.retrieval, embedder=HashingEmbedder(64)) as r:
        await add(r, "a.md", "# A\n\nKafka partitions order messages per key.", tenant="t1")
        await add(r, "b.md", "# B\n\nKafka partitions are replicated.", tenant="t2")
        await add(r, "c.md", "# C\n\nKafka partitions secret plan.", tenant="t1", acl=["fin"])
        yield r


def _worker(r: Retrieval, redis: Redis, settings: AppSettings) -> Worker:
    router = make_retrieval_router({}, 5.0, search=make_search_handler(r.searcher))
    return Worker(keys.Role.RETRIEVAL, router, redis, settings.bus, concurrency=2)


async def _search(
    remote: RemoteSearch, access: Access, request_id: str = "call-1", wait_s: float = 10
) -> list[str]:
    hits = await remote.search(
        "kafka partitions",
        access,
        top_k=10,
        run_id="run1",
        subject="alice",
        request_id=request_id,
        deadline=deadline_in(60),
        wait_s=wait_s,
    )
    return sorted(h.chunk.source for h in hits)


async def test_the_retrieval_role_answers_with_the_callers_chunks_only(
    redis: Redis, retrieval: Retrieval, settings: AppSettings
) -> None:
    remote = RemoteSearch(redis, settings.bus)
    async with running([_worker(retrieval, redis, settings)], redis):
        assert await _search(remote, Access.of("t1"), "c1") == ["a.md"]
        assert await _search(remote, Access.of("t1", ["fin"]), "c2") == ["a.md", "c.md"]
        assert await _search(remote, Access.of("t2"), "c3") == ["b.md"]
        # A retried request (a redelivered gateway step) reads its first reply: nothing
        # is published again.
        stream = keys.role_stream(keys.Role.RETRIEVAL, 0)
        published = await redis.xlen(stream)
        assert await _search(remote, Access.of("t1"), "c1") == ["a.md"]
        assert await redis.xlen(stream) == published


async def test_without_a_retrieval_worker_the_search_says_so(
    redis: Redis, settings: AppSettings
) -> None:
    with pytest.raises(SearchUnanswered) as raised:
        await _search(RemoteSearch(redis, settings.bus), Access.of("t1"), wait_s=0.2)
    assert raised.value.code == "retrieval_unavailable" and "retrieval worker" in raised.value.hint


async def test_a_reply_is_checked_against_the_callers_access_again(
    redis: Redis, settings: AppSettings
) -> None:
    remote = RemoteSearch(redis, settings.bus)
    command = Command(
        run_id="run1",
        tenant_id="t1",
        subject="alice",
        role=keys.Role.RETRIEVAL,
        branch="x",
        deadline=deadline_in(60),
        payload=SearchTask(query="q"),
    )

    def hit(source: str, tenant: str, acl: tuple[str, ...]) -> ReplyHit:
        return ReplyHit(
            id=source,
            tenant=tenant,
            acl=acl,
            doc_id="d",
            version="v",
            source=source,
            title="",
            position=0,
            heading="",
            text="t",
            content_hash="h",
            score=1.0,
        )

    forged = SearchReply(
        status="ok",
        hits=[
            hit("mine.md", "t1", ("*",)),
            hit("other.md", "t2", ("*",)),
            hit("hr.md", "t1", ("hr",)),
        ],
    )
    # The key a request with this id waits on: write a wrong answer there first.
    import hashlib

    digest = hashlib.sha256(b"forged").hexdigest()[:24]
    key = reply_key(command.model_copy(update={"branch": f"q{digest}"}))
    await redis.xadd(key, {wire.DATA_FIELD: forged.model_dump_json()})
    assert await _search(remote, Access.of("t1"), "forged") == ["mine.md"]


async def test_a_waiting_ingest_job_does_not_queue_searches(
    redis: Redis, retrieval: Retrieval, settings: AppSettings
) -> None:
    from retrieval.ingest import prepare
    from retrieval.jobs import publish_job, split_tasks
    from retrieval.loaders import parse

    text = "# Big\n\n" + "\n\n".join(f"## P{i}\n\nParagraph {i}." for i in range(40))
    doc = prepare(parse(text.encode(), source="big.md"), tenant="t1", chunking=retrieval.chunking)
    tasks = split_tasks([doc], batch_chunks=1, max_bytes=65_536)
    job = await publish_job(redis, settings.bus, tasks, tenant="t1", subject="cli")
    lane = keys.role_stream(keys.Role.RETRIEVAL, job.shard, keys.INGEST_LANE)
    assert await redis.xlen(lane) == len(tasks) > 1
    remote = RemoteSearch(redis, settings.bus)
    # Only the role's main stream is served: the search is answered at once all the same.
    async with running([_worker(retrieval, redis, settings)], redis):
        assert await _search(remote, Access.of("t1"), "q", wait_s=5) == ["a.md"]
    assert (await redis.xpending(lane, "retrieval"))["pending"] == 0
