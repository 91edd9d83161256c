"""Random entries on ``runs.questions``: each is admitted or rejected (with a coded
``RunResult`` on its reply stream) and deleted; none stops the admission, crashes a
process, or leaves a run or conversation behind when it was refused."""

from __future__ import annotations

import json
import sqlite3
import time
from collections import Counter
from collections.abc import Iterator
from typing import cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis import Redis

from api.streams.admission import run_id_for
from bus import keys, wire
from bus.commands import RunResult
from tests.conftest import TEST_REDIS_URL
from tests.fuzz.frames import questions
from tests.fuzz.system import FUZZ_EXAMPLES, System

pytestmark = [pytest.mark.connected, pytest.mark.timeout(FUZZ_EXAMPLES * 10 + 120)]

REPLIES = "fuzz.replies"
SETTLED_WITHIN_S = 30.0
#: Every run and conversation id an entry named so far: only ids named first by a refused
#: entry can show that it wrote nothing.
_named: set[str] = set()
#: What the fuzzer saw, printed after the module (``-s``): entries, rejections by code.
SEEN: Counter[str] = Counter()


@pytest.fixture(scope="module", autouse=True)
def counts() -> Iterator[None]:
    """Print the counts when the module is done."""
    yield
    print(f"runs.questions entries: {dict(SEEN.most_common())}")


@pytest.fixture
def redis() -> Iterator[Redis]:
    """A plain client of the test Redis (the system's own)."""
    client = Redis.from_url(TEST_REDIS_URL)
    try:
        yield client
    finally:
        client.close()


def _store_has(system: System, table: str, row_id: str) -> bool:
    path = system.env["AGENTBUS_DATABASE_URL"].removeprefix("sqlite+aiosqlite:///")
    with sqlite3.connect(path, timeout=30) as db:
        found = db.execute(f"SELECT 1 FROM {table} WHERE id = ?", (row_id,)).fetchone()
    return found is not None


def _named_ids(fields: dict[bytes, bytes]) -> dict[str, str]:
    """The run and conversation ids an entry's question names (table → id)."""
    try:
        doc = json.loads(fields.get(b"data", b""))
    except ValueError:
        return {}
    if not isinstance(doc, dict):
        return {}
    named = {"runs": doc.get("run_id"), "conversations": doc.get("conversation_id")}
    return {table: v for table, v in named.items() if isinstance(v, str) and v}


def _settle(redis: Redis, entry_ids: list[bytes]) -> None:
    until = time.monotonic() + SETTLED_WITHIN_S
    while time.monotonic() < until:
        if all(not redis.xrange(keys.QUESTIONS_STREAM, e, e) for e in entry_ids):
            return
        time.sleep(0.05)
    left = [e for e in entry_ids if redis.xrange(keys.QUESTIONS_STREAM, e, e)]
    raise AssertionError(f"entries still on {keys.QUESTIONS_STREAM}: {left}")


@pytest.fixture(scope="module")
def user_key(system: System) -> str:
    """A user's key of this module's own."""
    return system.key("t1", "stream-fuzzer")


@settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_every_entry_is_settled_and_a_refused_one_writes_nothing(
    redis: Redis, system: System, user_key: str, data: st.DataObject
) -> None:
    entries = data.draw(st.lists(questions(user_key), min_size=1, max_size=4))
    replies_before = cast(int, redis.xlen(REPLIES))
    named = [_named_ids(fields) for fields in entries]
    in_batch = Counter(v for ids in named for v in ids.values())
    # An id is fresh when only this entry, and no earlier one, ever named it.
    fresh = [
        {t: v for t, v in ids.items() if v not in _named and in_batch[v] == 1} for ids in named
    ]
    _named.update(in_batch)
    entry_ids = [
        cast(bytes, redis.xadd(keys.QUESTIONS_STREAM, fields))  # type: ignore[arg-type]
        for fields in entries
    ]
    _settle(redis, entry_ids)
    SEEN["entries"] += len(entries)
    run_of_entry = {
        ids.get("runs") or run_id_for(entry_id.decode()): i
        for i, (ids, entry_id) in enumerate(zip(named, entry_ids, strict=True))
    }

    rows = cast(list[tuple[bytes, dict[bytes, bytes]]], redis.xrange(REPLIES, "-", "+"))
    for _, reply in rows[replies_before:]:
        result = RunResult.model_validate_json(wire.raw_data(reply))
        if result.status != "rejected":
            continue
        assert result.stop_reason, result
        SEEN[f"rejected {result.stop_reason}"] += 1
        i = run_of_entry.get(result.run_id)
        if i is None:
            continue
        for table, row_id in fresh[i].items():
            assert not _store_has(system, table, row_id), (table, row_id, entries[i])
    assert system.dead() == []
