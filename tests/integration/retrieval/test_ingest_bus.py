"""An ingest job on the bus (fakeredis and a real Redis): split into messages, stored by
retrieval workers, finished once."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest
from redis.asyncio import Redis

from api.compose.settings import AppSettings
from bus import keys
from bus.events import Done
from bus.runtime.worker import Worker
from retrieval.embedders.hashing import HashingEmbedder
from retrieval.ingest import prepare
from retrieval.jobs import job_status, publish_job, split_tasks
from retrieval.loaders import parse
from retrieval.models import Access
from retrieval.stack import Retrieval, open_retrieval
from retrieval.worker import make_retrieval_handler
from tests.conftest import fake_client, real_client
from tests.support import drain, events_of, narrow


@pytest.fixture(params=["fake", pytest.param("real", marks=pytest.mark.connected)])
async def redis(request: pytest.FixtureRequest) -> AsyncIterator[Redis]:
    """The same tests in memory (fakeredis) and against the real test Redis."""
    client = fake_client() if request.param == "fake" else real_client()
    async with client as r:
        yield r


LONG = "# Manual\n\n" + "\n\n".join(
    f"## Part {i}\n\nPart {i} explains widget {i} in detail. It has several sentences. "
    "Each one adds a little more."
    for i in range(9)
)


@pytest.fixture
def settings(make_settings: Callable[..., AppSettings]) -> AppSettings:
    return make_settings(ingest_batch_chunks=2, reranker="none")


@pytest.fixture
async def retrieval(settings: AppSettings) -> AsyncIterator[Retrieval]:
    async with open_retrieval(settings.retrieval, embedder=HashingEmbedder(64)) as r:
        yield r


def _workers(r: Retrieval, redis: Redis, settings: AppSettings, n: int = 2) -> list[Worker]:
    handler = make_retrieval_handler(r.ingestor)
    return [
        Worker(
            keys.Role.RETRIEVAL, handler, redis, settings.bus, concurrency=2, lane=keys.INGEST_LANE
        )
        for _ in range(n)
    ]


async def _job(r: Retrieval, redis: Redis, settings: AppSettings, text: str) -> tuple[str, int]:
    doc = prepare(parse(text.encode(), source="manual.md"), tenant="t1", chunking=r.chunking)
    tasks = split_tasks(
        [doc], batch_chunks=settings.retrieval.ingest_batch_chunks, max_bytes=65_536
    )
    job = await publish_job(redis, settings.bus, tasks, tenant="t1", subject="cli")
    await drain(_workers(r, redis, settings), redis)
    return job.job_id, job.shard


async def test_a_split_job_is_stored_once_and_ends_with_one_done_event(
    redis: Redis, retrieval: Retrieval, settings: AppSettings
) -> None:
    job_id, shard = await _job(retrieval, redis, settings, LONG)
    status = await job_status(redis, job_id, shard)
    assert status.total == 5 and status.finished  # 9 chunks in batches of 2
    assert (status.embedded, status.unchanged, status.documents) == (9, 0, 1)
    assert await retrieval.store.count("t1") == 9
    events = await events_of(redis, job_id, shard)
    assert [e.type for e in events] == ["done"] and narrow(Done, events[0]).status == "done"

    # The same document again: nothing embedded; an edit replaces the old version.
    job2, shard2 = await _job(retrieval, redis, settings, LONG)
    again = await job_status(redis, job2, shard2)
    assert (again.embedded, again.unchanged, again.deleted) == (0, 9, 0)
    shorter = LONG.split("## Part 5")[0].replace("widget 0", "gadget 0")
    job3, shard3 = await _job(retrieval, redis, settings, shorter)
    edited = await job_status(redis, job3, shard3)
    assert (edited.embedded, edited.relabelled, edited.deleted) == (1, 4, 5)
    assert await retrieval.store.count("t1") == 5
    hits = await retrieval.searcher.search("gadget", Access("t1"), method="keyword")
    assert [h.chunk.heading for h in hits] == ["Part 0"]


async def test_a_redelivered_batch_is_harmless(
    redis: Redis, retrieval: Retrieval, settings: AppSettings
) -> None:
    job_id, shard = await _job(retrieval, redis, settings, LONG)
    # Replay every batch as if a worker had crashed after storing but before acking.
    stream = keys.role_stream(keys.Role.RETRIEVAL, shard, keys.INGEST_LANE)
    for _, fields in await redis.xrange(stream):
        await redis.xadd(stream, fields)
    await drain(_workers(retrieval, redis, settings, 1), redis)
    assert await retrieval.store.count("t1") == 9
    assert [e.type for e in await events_of(redis, job_id, shard)] == ["done"]
