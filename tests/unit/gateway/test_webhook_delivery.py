"""The webhook schedule, watcher and dispatcher, on fakeredis and the real test Redis."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator

import pytest
from redis.asyncio import Redis
from standardwebhooks.webhooks import Webhook

from bus import keys, wire
from bus.events import Answer, ApprovalRequest, ClientEvent, Done
from gateway.ports import TenantPolicy
from gateway.tenants import DeploymentPolicies
from gateway.webhooks import payloads
from gateway.webhooks.dispatcher import Dispatcher, RetryPolicy
from gateway.webhooks.schedule import Delivery, DeliveryStatus, Schedule, WebhookSpec
from gateway.webhooks.signing import new_secret
from gateway.webhooks.watcher import Watcher
from tests.conftest import fake_client, real_client
from tests.support import wait_for
from tests.unit.gateway.local_http import LocalServer, Seen, serve

SECRET = new_secret()


@pytest.fixture(params=["fake", pytest.param("real", marks=pytest.mark.connected)])
async def redis(request: pytest.FixtureRequest) -> AsyncIterator[Redis]:
    client = fake_client() if request.param == "fake" else real_client()
    async with client as r:
        yield r


@pytest.fixture
def receiver() -> Iterator[LocalServer]:
    yield from serve(LocalServer(), None)


def spec(url: str = "http://127.0.0.1:1/hook", approvals: bool = False) -> WebhookSpec:
    return WebhookSpec(url=url, tenant_id="t1", subject="alice", approvals=approvals)


async def register(redis: Redis, run_id: str, s: WebhookSpec) -> None:
    await redis.hset(keys.run_webhook(run_id, 0), mapping={"spec": s.model_dump_json()})  # pyright: ignore[reportGeneralTypeIssues] (redis-py: T | Awaitable[T])
    await redis.zadd(keys.webhook_watch(0), {run_id: time.time()})


async def emit(redis: Redis, *events: ClientEvent) -> list[str]:
    ids: list[str] = []
    for event in events:
        entry = await redis.xadd(keys.run_events(event.run_id, 0), {"data": wire.encode(event)})
        ids.append(entry.decode())
    return ids


async def watch_once(redis: Redis, schedule: Schedule) -> None:
    stopping = asyncio.Event()
    watcher = Watcher(redis, schedule, "me", retention_s=3600, block_ms=20)
    task = asyncio.create_task(watcher.run(0, stopping))
    await asyncio.sleep(0.3)
    stopping.set()
    await asyncio.wait_for(task, 5)


async def test_the_watcher_schedules_done_once_and_approvals_only_when_asked(redis: Redis) -> None:
    schedule = Schedule(redis, ttl_s=3600)
    await register(redis, "r1", spec(approvals=False))
    await register(redis, "r2", spec(approvals=True))
    await emit(
        redis,
        Answer(run_id="r1", delta="4"),
        ApprovalRequest(run_id="r1", reason="approve_answer", answer="draft"),
    )
    ids = await emit(
        redis,
        ApprovalRequest(run_id="r2", reason="approve_answer", answer="draft"),
        Done(run_id="r2", status="done", answer="437", usage={"prompt_tokens": 3}),
    )
    await watch_once(redis, schedule)
    # A watcher that lost its cursor processes everything again: nothing is scheduled twice.
    await redis.hset(keys.run_webhook("r2", 0), "cursor", "0-0")  # pyright: ignore[reportGeneralTypeIssues] (redis-py: T | Awaitable[T])
    await redis.zadd(keys.webhook_watch(0), {"r2": time.time()})
    await watch_once(redis, schedule)

    assert await schedule.for_run("r1", 0) == []
    assert (await redis.hget(keys.run_webhook("r1", 0), "cursor")) is not None  # pyright: ignore[reportGeneralTypeIssues] (redis-py: T | Awaitable[T])
    r2 = await schedule.for_run("r2", 0)
    assert [d.type for d in r2] == [payloads.APPROVAL_REQUESTED, payloads.COMPLETED]
    assert [d.id for d in r2] == [payloads.delivery_id("r2", i) for i in ids]
    done = json.loads(r2[1].body)
    assert done["data"] == {
        "run_id": "r2",
        "conversation_id": None,
        "status": "done",
        "answer": "437",
        "usage": {"prompt_tokens": 3},
        "stop_reason": None,
    }
    assert json.loads(r2[0].body)["data"]["resume"]["decisions"] == ["approve", "reject"]
    assert await redis.zscore(keys.webhook_watch(0), "r2") is None  # done: not watched
    assert await redis.zscore(keys.webhook_watch(0), "r1") is not None


async def test_a_stopping_watcher_returns_without_waiting_out_its_blocking_read(
    redis: Redis,
) -> None:
    schedule = Schedule(redis, ttl_s=3600)
    await register(redis, "r1", spec())
    stopping = asyncio.Event()
    watcher = Watcher(redis, schedule, "me", retention_s=3600, block_ms=4_000)
    task = asyncio.create_task(watcher.run(0, stopping))
    await asyncio.sleep(0.3)  # blocked in its read by now
    stopped = time.monotonic()
    stopping.set()
    await asyncio.wait_for(task, 5)
    assert time.monotonic() - stopped < 1.0
    # The read was only cancelled: the lease is given back and the run still followed.
    assert await schedule.hold_lease(0, "another", 15_000)
    assert await redis.zscore(keys.webhook_watch(0), "r1") is not None


async def test_a_claimed_delivery_is_not_claimed_again_until_its_lease_ends(redis: Redis) -> None:
    schedule = Schedule(redis, ttl_s=3600)
    now = time.time()
    await schedule.enqueue(
        0,
        spec(),
        "r1",
        delivery_id="m1",
        type="t",
        body=b"{}",
        now=now,
        cursor="1-0",
        finished=True,
    )

    first = await schedule.claim(0, "m1", now=now, lease_until=now + 30)
    again = await schedule.claim(0, "m1", now=now + 1, lease_until=now + 31)
    after_lease = await schedule.claim(0, "m1", now=now + 31, lease_until=now + 61)

    assert first is not None and first.attempts == 1 and first.status is DeliveryStatus.SENDING
    assert again is None
    assert after_lease is not None and after_lease.attempts == 2
    # The first attempt lost its lease: its late outcome is not recorded.
    stale = await schedule.finish(0, first, DeliveryStatus.DELIVERED, next_at=None, changes={})
    fresh = await schedule.finish(
        0, after_lease, DeliveryStatus.DELIVERED, next_at=None, changes={"last_status_code": 204}
    )
    [stored] = await schedule.for_run("r1", 0)
    assert (stale, fresh) == (False, True)
    assert stored.status is DeliveryStatus.DELIVERED and stored.last_status_code == 204
    assert await schedule.due(0, now + 1000, 10) == []


class _Policies:
    def __init__(self, **policy: object) -> None:
        self.policy = TenantPolicy(**policy)  # type: ignore[arg-type]

    async def for_tenant(self, tenant_id: str) -> TenantPolicy:
        return self.policy


async def _secret(_tenant: str) -> str:
    return SECRET


async def deliver(redis: Redis, url: str, *, until: set[str], **options: object) -> list[Delivery]:
    """Schedule one delivery to `url` and dispatch until its status is in `until`."""
    schedule = Schedule(redis, ttl_s=3600)
    await schedule.enqueue(
        0, spec(url), "r1", delivery_id="msg_1", type="run.completed",
        body=b'{"type":"run.completed"}', now=time.time(), cursor="1-0", finished=True,
    )  # fmt: skip
    dispatcher = make_dispatcher(schedule, **options)
    stopping = asyncio.Event()
    task = asyncio.create_task(dispatcher.run(0, stopping))

    async def reached() -> bool:
        return (await schedule.for_run("r1", 0))[0].status.value in until

    try:
        await wait_for(reached)
    finally:
        stopping.set()
        await asyncio.wait_for(task, 5)
    return await schedule.for_run("r1", 0)


def make_dispatcher(schedule: Schedule, **options: object) -> Dispatcher:
    policies = options.pop("policies", None) or _Policies(
        egress_enabled=True, allowed_egress_hosts=frozenset({"127.0.0.1"})
    )
    return Dispatcher(
        schedule,
        _secret,
        policies,  # type: ignore[arg-type]
        retry=options.pop("retry", RetryPolicy(backoff_s=0.05)),  # type: ignore[arg-type]
        timeout_s=2,
        allow_private=frozenset({"127.0.0.1"}),
        poll_s=0.02,
    )


async def test_failures_are_retried_with_the_same_id_and_valid_signatures(
    redis: Redis, receiver: LocalServer
) -> None:
    def flaky(seen: Seen) -> tuple[int, dict[str, str], bytes]:
        return (503, {}, b"busy") if len(receiver.seen) <= 2 else (204, {}, b"")

    receiver.routes["/hook"] = flaky
    [d] = await deliver(redis, f"http://127.0.0.1:{receiver.port}/hook", until={"delivered"})

    assert d.attempts == 3 and d.last_status_code == 204 and d.delivered_at is not None
    assert {s.headers["webhook-id"] for s in receiver.seen} == {"msg_1"}
    for seen in receiver.seen:
        assert Webhook(SECRET).verify(seen.body, seen.headers) == {"type": "run.completed"}


async def test_gone_fails_at_once_and_a_short_window_ends_retries(
    redis: Redis, receiver: LocalServer
) -> None:
    receiver.route("/gone", 410)
    receiver.route("/down", 500)
    url = f"http://127.0.0.1:{receiver.port}"

    [gone] = await deliver(redis, url + "/gone", until={"failed"})
    await redis.flushdb()
    # Long enough for a second attempt when the first is slow on a loaded host (0.3 s was not).
    window = RetryPolicy(backoff_s=0.05, retry_for_s=1.5)
    [down] = await deliver(redis, url + "/down", until={"failed"}, retry=window)

    assert gone.attempts == 1 and gone.last_status_code == 410
    assert down.attempts >= 2 and "500" in (down.last_error or "")


async def test_the_egress_path_refuses_what_a_tool_could_not_reach(
    redis: Redis, receiver: LocalServer
) -> None:
    receiver.route("/hook", 200)
    url = f"http://127.0.0.1:{receiver.port}/hook"

    no_egress = DeploymentPolicies.from_settings(egress_enabled=False, allowed_egress_hosts="")
    [blocked] = await deliver(redis, url, until={"refused"}, policies=no_egress)
    await redis.flushdb()
    [private] = await deliver(redis, "http://10.9.9.9/hook", until={"refused"})

    assert "egress_blocked" in (blocked.last_error or "")
    assert "ssrf_blocked" in (private.last_error or "")
    assert receiver.seen == []


async def test_a_new_dispatcher_takes_over_the_schedule_another_left(
    redis: Redis, receiver: LocalServer
) -> None:
    receiver.route("/down", 503)
    url = f"http://127.0.0.1:{receiver.port}/down"
    # The first process gives up mid-way (its objects are gone, only Redis remains) ...
    [first] = await deliver(redis, url, until={"retrying"}, retry=RetryPolicy(backoff_s=0.5))
    receiver.route("/down", 204)
    # ... and a fresh dispatcher, sharing nothing with it but Redis, finishes the job.
    schedule = Schedule(redis, ttl_s=3600)
    dispatcher = make_dispatcher(schedule)
    stopping = asyncio.Event()
    task = asyncio.create_task(dispatcher.run(0, stopping))

    async def delivered() -> bool:
        return (await schedule.for_run("r1", 0))[0].status is DeliveryStatus.DELIVERED

    try:
        await wait_for(delivered)
    finally:
        stopping.set()
        await asyncio.wait_for(task, 5)

    [done] = await schedule.for_run("r1", 0)
    assert first.attempts == 1 and done.attempts == 2
    assert [s.headers["webhook-id"] for s in receiver.seen] == ["msg_1", "msg_1"]
