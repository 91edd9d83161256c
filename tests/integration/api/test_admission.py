"""External publishers: XADD runs.questions, read the answer from the reply_to stream.

No entry outlives its admission: whatever the outcome, the entry (and the key in it) is
deleted from the stream.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from redis.asyncio import Redis

from agents.llm.scripted import BENCHMARK_ANSWER
from api import credentials
from api.compose.edge import make_use_cases, question_admission
from api.compose.settings import AppSettings
from api.streams.admission import QuestionAdmission, run_id_for
from bus import keys
from bus.commands import RunResult
from bus.fairshare import FairShare
from bus.store import Stores, open_store
from tests.integration.api.conftest import Api, StartApi
from tests.support import stream_commands, wait_for


async def reply(api: Api, stream: str, count: int = 1, within: float = 20) -> list[RunResult]:
    async def arrived() -> bool:
        return await api.redis.xlen(stream) >= count

    await wait_for(arrived, within=within)
    rows = await api.redis.xrange(stream)
    return [RunResult.model_validate_json(fields[b"data"]) for _, fields in rows]


async def test_a_question_on_the_stream_is_answered_on_reply_to(start_api: StartApi) -> None:
    api = await start_api()
    key = await api.key()
    question = {"api_key": key, "question": "What is 23 × 19?", "reply_to": "crm.answers"}

    entry = await api.redis.xadd(keys.QUESTIONS_STREAM, {"data": json.dumps(question)})

    [result] = await reply(api, "crm.answers")
    assert result.status == "done" and result.answer == BENCHMARK_ANSWER
    assert result.run_id == run_id_for(entry.decode()) and result.tenant_id == "t1"
    await questions_gone(api.redis)
    assert await redis_holding(api.redis, key.encode()) == []


async def questions_gone(redis: Redis) -> None:
    """Wait until runs.questions holds no entry and nothing is pending."""

    async def gone() -> bool:
        return await redis.xlen(keys.QUESTIONS_STREAM) == 0

    await wait_for(gone)
    pending = await redis.xpending(keys.QUESTIONS_STREAM, keys.ADMISSION_GROUP)
    assert pending["pending"] == 0


async def redis_holding(redis: Redis, needle: bytes) -> list[str]:
    """Every Redis key whose name or value contains ``needle``."""
    found = []
    async for name in redis.scan_iter(count=500):
        kind = (await redis.type(name)).decode()
        if kind == "stream":
            values = [str(fields).encode() for _, fields in await redis.xrange(name)]
        elif kind == "string":
            values = [await redis.get(name) or b""]
        elif kind == "hash":
            values = [str(await redis.hgetall(name)).encode()]  # pyright: ignore[reportGeneralTypeIssues] (redis-py: T | Awaitable[T])
        elif kind == "list":
            values = await redis.lrange(name, 0, -1)  # pyright: ignore[reportGeneralTypeIssues] (redis-py: T | Awaitable[T])
        else:  # set, zset
            values = [
                str(
                    await redis.zrange(name, 0, -1)
                    if kind == "zset"
                    else await redis.smembers(name)  # pyright: ignore[reportGeneralTypeIssues] (redis-py: T | Awaitable[T])
                ).encode()
            ]
        if needle in name or any(needle in v for v in values):
            found.append(name.decode())
    return found


async def test_bad_entries_are_answered_and_never_block_the_next(start_api: StartApi) -> None:
    api = await start_api()
    key = await api.key()
    bad = [
        {"data": "{not json"},
        {
            "data": json.dumps(
                {"api_key": "abk_0123456789ab_wrong", "question": "q", "reply_to": "r"}
            )
        },
        {"data": json.dumps({"api_key": key, "question": "", "reply_to": "r"})},
        {"other": "field"},
    ]
    for fields in bad:
        await api.redis.xadd(keys.QUESTIONS_STREAM, {**fields})
    await api.redis.xadd(
        keys.QUESTIONS_STREAM,
        {"data": json.dumps({"api_key": key, "question": "23 × 19?", "reply_to": "r"})},
    )

    results = await reply(api, "r", count=3)

    assert [(r.status, r.stop_reason) for r in results] == [
        ("rejected", "unauthorized"),
        ("rejected", "invalid_question"),
        ("done", None),
    ]
    await questions_gone(api.redis)  # rejected entries are deleted too
    assert await redis_holding(api.redis, b"abk_0123456789ab_wrong") == []


async def test_a_redelivered_entry_starts_no_second_run(start_api: StartApi) -> None:
    api = await start_api()
    key = await api.key()
    admission = question_admission(
        api.settings, api.redis, make_use_cases(api.settings, api.redis, api.stores)
    )
    fields = {b"data": json.dumps({"api_key": key, "question": "q"}).encode()}

    outcomes = [await admission.handle("1-1", fields, delivery=d) for d in (1, 2)]

    assert outcomes == ["admitted", "admitted"]
    commands = [c for c in await stream_commands(api.redis, keys.Role.INTAKE)]
    assert [c.run_id for c in commands] == [run_id_for("1-1")]


@pytest.fixture
async def admission(
    real_redis: Redis, make_settings: Callable[..., AppSettings]
) -> AsyncIterator[Callable[..., Any]]:
    """An admission consumer alone (no API server reading the stream beside the test)."""
    contexts: list[Any] = []

    async def make(**overrides: Any) -> tuple[QuestionAdmission, Stores]:
        s = make_settings(**overrides)
        ctx = open_store(s.bus, migrate=True)
        stores = await ctx.__aenter__()
        contexts.append(ctx)
        consumer = question_admission(
            s, real_redis, make_use_cases(s, real_redis, stores), consumer="c1"
        )
        await real_redis.xgroup_create(
            keys.QUESTIONS_STREAM, keys.ADMISSION_GROUP, id="$", mkstream=True
        )
        return consumer, stores

    yield make
    for ctx in contexts:
        await ctx.__aexit__(None, None, None)


async def delivered(redis: Redis, fields: dict[str, str]) -> tuple[str, dict[bytes, bytes]]:
    """XADD an entry and read it as the admission group's consumer (it is now pending)."""
    await redis.xadd(keys.QUESTIONS_STREAM, {**fields})
    [(_, [(entry_id, got)])] = await redis.xreadgroup(
        keys.ADMISSION_GROUP, "c1", {keys.QUESTIONS_STREAM: ">"}, count=1
    )
    return entry_id.decode(), got


async def test_an_admitter_dying_before_the_delete_starts_one_run_and_spends_one_token(
    admission: Callable[..., Any], real_redis: Redis
) -> None:
    # A burst of one: a second rate token right away would be refused (rate_limited).
    consumer, stores = await admission(api_rate_per_minute=1, api_rate_burst=1)
    key = (await _key(stores)).key
    entry_id, fields = await delivered(
        real_redis, {"data": json.dumps({"api_key": key, "question": "q", "reply_to": "r"})}
    )

    async def die(entry_id: str) -> None:
        raise ConnectionError("killed between publishing the run and deleting the entry")

    settle, consumer._settle = consumer._settle, die  # type: ignore[method-assign]
    with pytest.raises(ConnectionError):
        await consumer.handle(entry_id, fields, delivery=1)
    assert await real_redis.xlen(keys.QUESTIONS_STREAM) == 1  # still there, still pending
    consumer._settle = settle  # type: ignore[method-assign]
    outcome = await consumer.handle(entry_id, fields, delivery=2)  # the redelivery

    assert outcome == "admitted"
    # No researcher runs here to make room (`bus.fairshare`): open some, as one would.
    await FairShare(real_redis, consumer.settings).open_room(0, 4)
    assert [c.run_id for c in await stream_commands(real_redis, keys.Role.INTAKE)] == [
        run_id_for(entry_id)
    ]
    assert await real_redis.xlen("r") == 0  # no "rejected" reply for a run that started
    await questions_gone(real_redis)


async def test_the_backlog_of_unadmitted_entries_is_capped(
    admission: Callable[..., Any], real_redis: Redis
) -> None:
    consumer, stores = await admission(api_questions_maxlen=100)
    key = (await _key(stores)).key
    async with real_redis.pipeline(transaction=False) as pipe:
        for n in range(1000):  # a flood nobody admits (e.g. every API process was down)
            pipe.xadd(keys.QUESTIONS_STREAM, {"data": f"junk {n}"})
        await pipe.execute()
    fields = {b"data": json.dumps({"api_key": key, "question": "q"}).encode()}
    entry_id = (await real_redis.xadd(keys.QUESTIONS_STREAM, {**fields})).decode()

    await consumer.handle(entry_id, fields, delivery=1)

    assert await real_redis.xlen(keys.QUESTIONS_STREAM) <= 300  # MAXLEN ~ 100: whole nodes
    assert not await real_redis.xrange(keys.QUESTIONS_STREAM, entry_id, entry_id)


async def _key(stores: Stores) -> credentials.MintedKey:
    return await credentials.create_key(stores.keys, "t1", "alice")
