"""Scheduled questions over REST and the scheduler, against a real API, workers and store.

The schedules here tick once a year (``YEARLY``), so the API's own scheduler, on the real
clock, never reaches them; each test drives schedulers of its own on a fake clock set to
the tick. Those schedulers are other replicas: their own run starter, over the same
Redis and store (and, for the concurrency test, their own engine).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from api import credentials
from api.app.scheduler import UNPUBLISHED_GRACE_S, Scheduler
from api.compose.starter import make_starter
from bus import keys
from bus.store import KeyRole, ScheduleStore, TickState, make_engine
from tests.integration.api.conftest import Api, StartApi
from tests.integration.api.owners import api_reads
from tests.integration.api.test_cli_remote import run_cli
from tests.integration.api.test_multitask import ended, events_of, messages
from tests.integration.api.test_webhooks import HOOK_SETTINGS, Receiver, hook_tenant
from tests.unit.gateway.local_http import LocalServer, serve

REPO = Path(__file__).resolve().parents[3]
YEARLY = "0 0 1 1 *"
#: The API's own scheduler passes once at start, then sleeps this long: an hourly
#: schedule's real tick cannot race the test's fake clock.
QUIET_POLL_S = 3600.0
QUESTION = "What is 23 × 19?"


class Clock:
    """A clock the test moves."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def scheduler(api: Api, clock: Clock, store: ScheduleStore | None = None) -> Scheduler:
    """Another replica's scheduler (its own run starter) on the fake clock."""
    assert api.stores.schedules is not None
    return Scheduler(
        store or api.stores.schedules,
        make_starter(api.settings, api.redis, api.stores),
        api.stores.keys,
        misfire_grace_s=120,
        clock=clock,
    )


async def add(api: Api, key: str, **body: Any) -> dict[str, Any]:
    doc = {"cron": YEARLY, "question": QUESTION} | body
    created = await api.http.post("/api/v1/schedules", json=doc, headers=api.auth(key))
    assert created.status_code == 201, created.text
    result: dict[str, Any] = created.json()
    return result


def next_tick(schedule: dict[str, Any]) -> float:
    return datetime.fromisoformat(schedule["next_run_at"]).timestamp()


async def detail(api: Api, key: str, schedule_id: str) -> dict[str, Any]:
    got = await api.http.get(f"/api/v1/schedules/{schedule_id}", headers=api.auth(key))
    assert got.status_code == 200, got.text
    result: dict[str, Any] = got.json()
    return result


async def test_a_schedule_is_added_listed_read_paused_resumed_and_deleted_by_its_owner(
    start_api: StartApi,
) -> None:
    api = await start_api()
    alice = await api.key()
    auth = api.auth(alice)

    created = await add(api, alice, timezone="Europe/Paris", settings={"mode": "multi"})
    listed = (await api.http.get("/api/v1/schedules", headers=auth)).json()["schedules"]
    paused = await api.http.post(f"/api/v1/schedules/{created['id']}/pause", headers=auth)
    resumed = await api.http.post(f"/api/v1/schedules/{created['id']}/resume", headers=auth)
    deleted = await api.http.delete(f"/api/v1/schedules/{created['id']}", headers=auth)
    after = await api.http.get(f"/api/v1/schedules/{created['id']}", headers=auth)

    assert created["cron"] == YEARLY and created["timezone"] == "Europe/Paris"
    assert created["settings"] == {"mode": "multi"} and created["missed"] == "skip"
    assert created["subject"] == "alice" and not created["paused"]
    assert datetime.fromisoformat(created["next_run_at"]).month == 12  # Jan 1 Paris, in UTC
    assert [s["id"] for s in listed] == [created["id"]]
    assert paused.status_code == 200 and paused.json()["paused"]
    assert resumed.status_code == 200 and not resumed.json()["paused"]
    assert deleted.status_code == 204
    assert after.status_code == 404 and after.json()["error"]["code"] == "schedule_not_found"


async def test_another_users_schedule_is_not_found_and_an_admin_reads_but_may_not_change_it(
    start_api: StartApi, store_backend: dict[str, Any]
) -> None:
    api = await start_api(**store_backend)
    alice, bob = await api.key("t1", "alice"), await api.key("t1", "bob")
    admin = await api.key("t1", "root", KeyRole.ADMIN)
    stranger = await api.key("t2", "alice")
    created = await add(api, alice)
    path = f"/api/v1/schedules/{created['id']}"

    for key in (bob, stranger):
        for method, url in [("get", path), ("post", f"{path}/pause"), ("delete", path)]:
            answer = await api.http.request(method, url, headers=api.auth(key))
            assert answer.status_code == 404, (method, answer.text)
        listed = await api.http.get("/api/v1/schedules", headers=api.auth(key))
        assert listed.json()["schedules"] == []
    read = await api.http.get(path, headers=api.auth(admin))
    tenant = await api.http.get("/api/v1/schedules", headers=api.auth(admin))
    pause = await api.http.post(f"{path}/pause", headers=api.auth(admin))

    assert read.status_code == 200 and read.json()["schedule"]["subject"] == "alice"
    assert [s["id"] for s in tenant.json()["schedules"]] == [created["id"]]
    assert pause.status_code == 403 and pause.json()["error"]["code"] == "not_owner"
    assert {r["tool"] for r in await api_reads(api, admin)} >= {"read_schedule", "list_schedules"}
    still = await detail(api, alice, created["id"])
    assert not still["schedule"]["paused"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"cron": "61 * * * *"}, "cron"),
        ({"cron": "* * *"}, "cron"),
        ({"timezone": "Mars/Olympus"}, "timezone"),
        ({"missed": "always"}, "missed"),
        ({"question": "   "}, "question"),
        ({"settings": {"mode": "psychic"}}, "settings.mode"),
        ({"every": "day"}, "every"),
    ],
)
async def test_a_bad_schedule_is_422_naming_its_field_and_stores_nothing(
    start_api: StartApi, body: dict[str, Any], field: str
) -> None:
    api = await start_api()
    alice = await api.key()

    doc = {"cron": YEARLY, "question": QUESTION} | body
    refused = await api.http.post("/api/v1/schedules", json=doc, headers=api.auth(alice))

    assert refused.status_code == 422, refused.text
    assert refused.json()["error"]["code"] == "invalid_request"
    assert refused.json()["error"]["field"] == field
    listed = await api.http.get("/api/v1/schedules", headers=api.auth(alice))
    assert listed.json()["schedules"] == []


async def test_a_webhook_the_tenant_may_not_reach_is_refused_when_the_schedule_is_added(
    start_api: StartApi,
) -> None:
    api = await start_api()
    alice = await api.key()

    doc = {"cron": YEARLY, "question": QUESTION, "webhook_url": "http://10.1.2.3/hook"}
    refused = await api.http.post("/api/v1/schedules", json=doc, headers=api.auth(alice))

    assert refused.status_code == 422 and refused.json()["error"]["code"] == "webhook_refused"


async def test_a_due_tick_starts_one_run_whose_answer_lands_in_the_schedules_conversation(
    start_api: StartApi, store_backend: dict[str, Any]
) -> None:
    api = await start_api(**store_backend)
    alice = await api.key()
    created = await add(api, alice)
    clock = Clock(next_tick(created))

    [tick] = await scheduler(api, clock).run_due()
    again = await scheduler(api, clock).run_due()  # the same moment, another replica
    assert tick.run_id is not None
    run = await ended(api, alice, tick.run_id)
    history = await messages(api, alice, created["conversation_id"])
    seen = await detail(api, alice, created["id"])

    assert again == []
    assert run["status"] == "done" and "437" in run["answer"]
    assert [(m["role"], m["run_id"]) for m in history] == [
        ("user", tick.run_id),
        ("assistant", tick.run_id),
    ]
    assert history[0]["content"] == QUESTION
    assert [(t["state"], t["run_id"]) for t in seen["ticks"]] == [("started", tick.run_id)]
    assert next_tick(seen["schedule"]) > clock.now  # moved on to next year's


async def test_two_replicas_on_their_own_engines_start_one_run_per_tick(
    start_api: StartApi, store_backend: dict[str, Any]
) -> None:
    api = await start_api(**store_backend)
    alice = await api.key()
    created = await add(api, alice)
    clock = Clock(next_tick(created))
    engine = make_engine(api.settings.bus.resolved_database_url())
    try:
        mine, theirs = scheduler(api, clock), scheduler(api, clock, ScheduleStore(engine))
        claimed = await asyncio.gather(mine.run_due(), theirs.run_due(), mine.run_due())
    finally:
        await engine.dispose()

    [tick] = [t for ticks in claimed for t in ticks]
    assert tick.run_id is not None
    assert (await ended(api, alice, tick.run_id))["status"] == "done"
    runs = (await api.http.get("/api/v1/runs", headers=api.auth(alice))).json()["runs"]
    assert [r["id"] for r in runs] == [tick.run_id]
    assert [e["type"] for e in await events_of(api, tick.run_id)].count("run_started") == 1


@pytest.mark.parametrize(("missed", "runs"), [("skip", 0), ("run_once", 1)])
async def test_ticks_missed_while_nothing_ran_follow_the_schedules_policy(
    start_api: StartApi, missed: str, runs: int
) -> None:
    api = await start_api(schedule_poll_s=QUIET_POLL_S)
    alice = await api.key()
    created = await add(api, alice, cron="0 * * * *", missed=missed)
    clock = Clock(next_tick(created) + 5 * 3600 + 600)  # down for five hours and more

    ticks = await scheduler(api, clock).run_due()
    again = await scheduler(api, clock).run_due()

    [tick] = ticks
    assert again == []
    assert tick.tick_at == next_tick(created) + 5 * 3600
    assert (tick.run_id is not None) == bool(runs)
    if tick.run_id is not None:
        assert (await ended(api, alice, tick.run_id))["status"] == "done"
    listed = (await api.http.get("/api/v1/runs", headers=api.auth(alice))).json()["runs"]
    assert len(listed) == runs
    seen = await detail(api, alice, created["id"])
    assert seen["ticks"][0]["state"] == ("started" if runs else "skipped")
    assert next_tick(seen["schedule"]) == next_tick(created) + 6 * 3600


async def test_a_paused_schedule_runs_nothing_and_resumes_at_its_next_tick_after_now(
    start_api: StartApi,
) -> None:
    api = await start_api(schedule_poll_s=QUIET_POLL_S)
    alice = await api.key()
    created = await add(api, alice, cron="0 * * * *")
    path = f"/api/v1/schedules/{created['id']}"
    await api.http.post(f"{path}/pause", headers=api.auth(alice))
    clock = Clock(next_tick(created) + 7200)

    assert await scheduler(api, clock).run_due() == []
    resumed = await api.http.post(f"{path}/resume", headers=api.auth(alice))

    assert next_tick(resumed.json()) > datetime.now().timestamp()  # the real clock's next


async def test_a_revoked_keys_schedule_starts_no_run_and_says_why(start_api: StartApi) -> None:
    api = await start_api()
    alice = await api.key()
    created = await add(api, alice)
    key_id = credentials.key_id(alice)
    assert key_id is not None
    await api.stores.keys.revoke(key_id)
    clock = Clock(next_tick(created))

    [tick] = await scheduler(api, clock).run_due()

    assert (tick.state, tick.error) == (TickState.REFUSED, "key_revoked")
    other = await api.key()  # alice's new key reads what her schedule did
    seen = await detail(api, other, created["id"])
    assert seen["ticks"][0]["error"] == "key_revoked"
    assert (await api.http.get("/api/v1/runs", headers=api.auth(other))).json()["runs"] == []


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    for server in serve(LocalServer(), None):
        yield Receiver(server)


async def test_a_scheduled_runs_result_is_posted_signed_to_the_schedules_webhook(
    start_api: Any, receiver: Receiver
) -> None:
    api = await start_api(**HOOK_SETTINGS)
    _, alice = await hook_tenant(api, receiver)
    created = await add(api, alice, webhook_url=receiver.url)

    [tick] = await scheduler(api, Clock(next_tick(created))).run_due()
    [payload] = await receiver.wait_for(1)

    assert payload["type"] == "run.completed" and receiver.bad_signatures == 0
    assert payload["data"]["run_id"] == tick.run_id
    assert payload["data"]["conversation_id"] == created["conversation_id"]
    assert "437" in payload["data"]["answer"]


async def test_a_scheduler_killed_between_claim_and_start_has_its_tick_run_once_by_a_sweep(
    start_api: StartApi,
) -> None:
    api = await start_api()
    alice = await api.key()
    created = await add(api, alice)
    tick_at = next_tick(created)
    env = os.environ | {
        "AGENTBUS_DATABASE_URL": api.settings.bus.resolved_database_url(),
        "AGENTBUS_DATA_DIR": str(api.settings.bus.data_dir),
    }
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.integration.api.schedule_claimer",
        str(tick_at),
        env=env,
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert child.stdout is not None
        line = b""
        async with asyncio.timeout(60):
            while not line.startswith(b"claimed "):
                line = await child.stdout.readline()
                assert line, "the claimer exited before it claimed"
    finally:
        child.send_signal(signal.SIGKILL)
        await child.wait()
    run_id = line.split()[1].decode()
    shard = keys.shard_of(run_id, api.settings.bus.shards)

    [stuck] = (await detail(api, alice, created["id"]))["ticks"]
    assert (stuck["state"], stuck["run_id"]) == ("claimed", run_id)
    assert not await api.redis.exists(keys.run_owner(run_id, shard))  # never published
    assert await scheduler(api, Clock(tick_at)).run_due() == []  # claimed: not due again
    clock = Clock(tick_at + 1)
    assert await scheduler(api, clock).sweep() == []  # too soon: its claimer may be starting it
    clock.now = tick_at + UNPUBLISHED_GRACE_S + 1
    [swept] = await scheduler(api, clock).sweep()
    run = await ended(api, alice, run_id)

    assert swept.state == TickState.STARTED and run["status"] == "done"
    assert await scheduler(api, clock).sweep() == []
    [tick] = (await detail(api, alice, created["id"]))["ticks"]
    assert (tick["state"], tick["run_id"]) == ("started", run_id)
    assert [e["type"] for e in await events_of(api, run_id)].count("run_started") == 1
    assert len(await messages(api, alice, created["conversation_id"])) == 2


@pytest.mark.timeout(300)
async def test_the_cli_adds_lists_pauses_resumes_and_deletes_schedules_the_api_runs(
    start_api: StartApi,
) -> None:
    api = await start_api()
    env = {
        "AGENTBUS_DATA_DIR": str(api.settings.bus.data_dir),
        "AGENTBUS_TENANT": "t1",
        "AGENTBUS_SUBJECT": "alice",
        "AGENTBUS_GROUPS": "eng",
    }
    alice = await api.key("t1", "alice")

    code, out, err = await run_cli(
        ["schedules", "add", YEARLY, QUESTION, "--timezone", "Europe/Paris", "--json"], env
    )
    bad, _, bad_err = await run_cli(["schedules", "add", "61 * * * *", QUESTION], env)
    assert code == 0, err
    added = json.loads(out)
    seen = await detail(api, alice, added["id"])  # the API reads what the CLI wrote
    paused = await run_cli(["schedules", "pause", added["id"]], env)
    listed = await run_cli(["schedules", "list", "--json"], env)
    resumed = await run_cli(["schedules", "resume", added["id"]], env)

    assert bad == 2 and "error [invalid_request]" in bad_err and "minute" in bad_err
    assert seen["schedule"]["timezone"] == "Europe/Paris"
    assert paused[0] == 0 and "paused" in paused[1]
    assert [json.loads(line)["paused"] for line in listed[1].splitlines()] == [True]
    assert resumed[0] == 0 and "next " in resumed[1]
    [tick] = await scheduler(api, Clock(next_tick(seen["schedule"]))).run_due()
    assert tick.run_id is not None
    run = await ended(api, alice, tick.run_id)
    assert run["status"] == "done" and run["conversation_id"] == added["conversation_id"]
    removed = await run_cli(["schedules", "delete", added["id"]], env)
    gone = await run_cli(["schedules", "delete", added["id"]], env)
    assert removed[0] == 0 and gone[0] == 2 and "schedule_not_found" in gone[2]
