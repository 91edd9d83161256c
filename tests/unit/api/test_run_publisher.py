"""Publishing a run, seen from the application layer: what the `RunPublishing` port answers
becomes the caller's run or a refusal, and a refused run gives its quota slot back. No Redis:
the port is a fake; its Redis side's answers are decoded as the script gives them."""

from __future__ import annotations

import time

import pytest

from api.app.ask import Ask, RunToPublish
from api.app.auth import local_user
from api.app.errors import InvalidRequest, TenantQueueFull
from api.app.ports import Outcome, Published, RateLimits, Verdict
from api.app.run_publish import RunPublisher, VersionMoved
from api.streams.run_publishing import published
from bus import fairshare
from bus.commands import new_run_id
from bus.run_state import RunSettings
from bus.store.turn_types import FirstTurn, Turn


class _Prepared:
    def __init__(self, answer: Published, calls: list[int | None]) -> None:
        self._answer = answer
        self._calls = calls

    def stored(self) -> str:
        return "{}"

    async def publish(
        self, *, version: int | None = None, first_turn: FirstTurn | None = None
    ) -> Published:
        self._calls.append(version)
        return self._answer


class _Publishing:
    """A `RunPublishing` that answers every publication with ``answer``."""

    def __init__(self, answer: Published) -> None:
        self.answer = answer
        self.versions: list[int | None] = []

    def shard_of(self, id_: str) -> int:
        return 0

    def prepare(self, run: RunToPublish) -> _Prepared:
        return _Prepared(self.answer, self.versions)

    async def owner(self, run_id: str) -> str | None:
        return None

    async def publish_queued(self, turn: Turn) -> Published:
        return self.answer


class _Limits:
    """A quota that records the slots given back."""

    def __init__(self) -> None:
        self.released: list[str] = []

    @property
    def per_minute(self) -> int:
        return 0

    @property
    def max_active(self) -> int:
        return 0

    async def check_rate(self, tenant_id: str) -> Verdict:
        return Verdict(allowed=True)

    async def acquire(self, tenant_id: str, run_id: str, deadline: float) -> Verdict:
        return Verdict(allowed=True)

    async def release(self, tenant_id: str, run_id: str) -> None:
        self.released.append(run_id)


async def _cancel(run_id: str) -> None:
    return None


def _run(version: int | None = None) -> RunToPublish:
    who = local_user("acme", "ana")
    run_id = new_run_id()
    deadline = time.time() + 60
    return RunToPublish(who, Ask("q"), run_id, "conv", RunSettings(), 0, deadline, version=version)


def _publisher(answer: Published) -> tuple[RunPublisher, _Publishing, _Limits]:
    publishing, limits = _Publishing(answer), _Limits()
    limits_port: RateLimits = limits
    return RunPublisher(publishing, _cancel, limits_port, None), publishing, limits


async def test_a_published_run_starts_and_keeps_its_quota_slot() -> None:
    publisher, _, limits = _publisher(Published(Outcome.PUBLISHED))
    run = _run()
    started = await publisher.send(run, False, "enqueue")
    assert (started.run_id, started.replayed, started.queued) == (run.run_id, False, False)
    assert limits.released == []


async def test_a_run_published_before_is_a_replay() -> None:
    publisher, _, _ = _publisher(Published(Outcome.REPEATED))
    started = await publisher.send(_run(), False, "enqueue")
    assert started.replayed


async def test_a_full_tenant_queue_is_refused_with_its_wait_and_gives_the_slot_back() -> None:
    publisher, _, limits = _publisher(Published(Outcome.QUEUE_FULL, waiting=9, retry_after_s=7))
    run = _run()
    with pytest.raises(TenantQueueFull) as refused:
        await publisher.send(run, False, "enqueue")
    assert refused.value.retry_after == 7
    assert limits.released == [run.run_id]


async def test_a_moved_tenant_version_is_checked_in_the_publication_and_publishes_nothing() -> None:
    publisher, publishing, limits = _publisher(Published(Outcome.VERSION_MOVED, version=5))
    run = _run(version=4)
    with pytest.raises(VersionMoved) as moved:
        await publisher.send(run, False, "enqueue")
    assert (moved.value.seen, publishing.versions) == (5, [4])
    assert limits.released == [run.run_id]


async def test_another_owners_run_id_is_refused() -> None:
    publisher, _, limits = _publisher(Published(Outcome.ID_TAKEN))
    run = _run()
    with pytest.raises(InvalidRequest):
        await publisher.send(run, False, "enqueue")
    assert limits.released == [run.run_id]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ([1], Published(Outcome.PUBLISHED)),
        ([0], Published(Outcome.REPEATED)),
        ([-1], Published(Outcome.ID_TAKEN)),
        (
            [-2, 12, 3],
            Published(Outcome.QUEUE_FULL, waiting=12, retry_after_s=fairshare.retry_after_s(12, 3)),
        ),
        ([-3, b"6"], Published(Outcome.VERSION_MOVED, version=6)),
    ],
)
def test_the_publish_scripts_answers_are_the_ports_values(
    reply: list[int | bytes], expected: Published
) -> None:
    assert published(reply) == expected
