"""A rolling upgrade from the previous release loses nothing.

The previous release (`tests.previous_release`: the tagged commit, its own venv) migrates
the store and runs every role in three worker processes on a real Redis and a SQL store
(SQLite; Postgres as the application role row-level security binds, migrated by the
schema owner with ``--grant-to``). Runs are put in flight (single and multi mode) and two
are paused at the answer gate. Then, as an operator would: this build's migrations first,
then each process is replaced by this build's, one at a time (the new one joins, a wave of
runs starts, the old one gets SIGTERM and drains). At the end every run is done once, none
was dead-lettered, and the runs the previous release paused resume, through this build's
CLI, to done.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
from pathlib import Path

import httpx
import pytest
from redis.asyncio import Redis

from bus import keys
from bus.commands import AgentTask, Command, RunSettings, RunState, deadline_in, new_run_id
from bus.events import ClientEvent
from bus.publish import publish
from bus.runtime.deadletter import dead_letter_stream
from bus.settings import BusSettings
from tests.conftest import TEST_REDIS_URL
from tests.integration.conftest import as_asyncpg, pg_execute, run_in_thread
from tests.previous_release import previous_release
from tests.processes import AGENTBUS, cli, free_port, processes, spawn
from tests.support import events_of, wait_for

pytestmark = pytest.mark.timeout(900)

#: Every role, in the three processes each release runs.
FLEET = [
    ["intake", "planner", "finalizer", "recorder"],
    ["researcher", "gateway", "retrieval"],
    ["critic", "verifier"],
]
QUESTION = "What is 23 × 19?"
SETTINGS = {
    "single": RunSettings(mode="single"),
    "multi": RunSettings(mode="multi", verifier_check=False),
    "accurate": RunSettings(mode="multi", accuracy="accurate", verifier_check=False),
    "gated": RunSettings(mode="multi", verifier_check=False, human_gate=True),
}


async def _start(redis: Redis, kind: str) -> str:
    command = Command(
        run_id=new_run_id(),
        tenant_id="t1",
        subject="alice",
        role=keys.Role.INTAKE,
        deadline=deadline_in(600),
        payload=AgentTask(state=RunState(question=QUESTION, settings=SETTINGS[kind])),
    )
    await publish(redis, command, BusSettings(redis_url=TEST_REDIS_URL))
    return command.run_id


async def _until_ready(port: int) -> None:
    """Until the worker answers its readiness probe (it reads its streams)."""

    async def ready() -> bool:
        try:
            async with httpx.AsyncClient(timeout=2) as client:
                return (await client.get(f"http://127.0.0.1:{port}/readyz")).status_code == 200
        except httpx.HTTPError:
            return False

    await wait_for(ready, within=180, interval=0.2)  # several processes start on a shared host


def _worker(
    roles: list[str], env: dict[str, str], log: Path, program: str = AGENTBUS
) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    own = env | {"AGENTBUS_METRICS_PORT": str(port)}
    return spawn(["worker", *roles], own, log, program=program), port


async def _ended(redis: Redis, run_id: str) -> list[ClientEvent] | None:
    events = await events_of(redis, run_id)
    return events if events and events[-1].type in ("done", "approval_request") else None


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str, list[str]]:
    """The store's URL for the processes, the migration's, and the migration's arguments."""
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
        return url, url, []
    admin: str = request.getfixturevalue("postgres_database")
    role: str = request.getfixturevalue("postgres_app_role")
    run_in_thread(lambda: pg_execute(admin, "DROP SCHEMA public CASCADE", "CREATE SCHEMA public"))
    return as_asyncpg(admin, role), as_asyncpg(admin), ["--grant-to", role]


async def test_replacing_each_worker_with_this_build_loses_no_run(
    real_redis: Redis,
    tmp_path: Path,
    store: tuple[str, str, list[str]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    old = str(previous_release())
    url, owner_url, grant = store
    env = {
        "AGENTBUS_REDIS_URL": TEST_REDIS_URL,
        "AGENTBUS_DATABASE_URL": url,
        "AGENTBUS_DATA_DIR": str(tmp_path / "data"),
        "AGENTBUS_LLM": "scripted",
        "AGENTBUS_LLM_TOKEN_DELAY_S": "0.1",
        "AGENTBUS_CLAIM_IDLE_MS": "2000",
        "AGENTBUS_HEARTBEAT_MS": "300",
        "AGENTBUS_READ_BLOCK_MS": "100",
        "AGENTBUS_TENANT": "t1",
        "AGENTBUS_SUBJECT": "alice",
        "PYTHONPATH": "",  # each release imports its own code only
    }
    owner = env | {"AGENTBUS_DATABASE_URL": owner_url}  # migrations run as the schema owner
    await cli(["db", "upgrade", *grant], owner, program=old)  # the previous release's head
    runs: dict[str, str] = {}
    in_flight_at_swap: list[int] = []
    with processes() as procs:
        started = [_worker(r, env, tmp_path / f"old-{i}.log", old) for i, r in enumerate(FLEET)]
        fleet = [proc for proc, _ in started]
        procs.extend(fleet)
        for _, port in started:
            await _until_ready(port)

        for kind in ("gated", "gated", "single", "multi"):
            runs[await _start(real_redis, kind)] = kind
        gated = [r for r, k in runs.items() if k == "gated"]

        async def paused() -> bool:
            return all([await _ended(real_redis, r) for r in gated])

        await wait_for(paused, within=180)  # the previous release paused them

        await cli(["db", "upgrade", *grant], owner)  # migrations first, the old workers running
        for i, roles in enumerate(FLEET):
            new, port = _worker(roles, env, tmp_path / f"new-{i}.log")
            procs.append(new)
            await _until_ready(port)
            for kind in ("single", "multi", "accurate"):
                runs[await _start(real_redis, kind)] = kind
            await asyncio.sleep(0.5)  # the wave's first steps are taken
            in_flight_at_swap.append(
                sum([await _ended(real_redis, r) is None for r in runs if r not in gated])
            )
            fleet[i].send_signal(signal.SIGTERM)  # drains its steps in flight, then exits
            assert await asyncio.to_thread(fleet[i].wait, 120) == 0

        async def all_ended() -> bool:
            return all([await _ended(real_redis, r) for r in runs])

        await wait_for(all_ended, within=240)
        for run_id in gated:  # resumed through this build, from the old release's checkpoint
            await cli(["runs", "resume", run_id, "approve"], env)

        async def all_done() -> bool:
            return all([(await events_of(real_redis, r))[-1].type == "done" for r in runs])

        await wait_for(all_done, within=240)

    finals = {r: [e for e in await events_of(real_redis, r) if e.type == "done"] for r in runs}
    done = [r for r, ends in finals.items() if [getattr(e, "status", "") for e in ends] == ["done"]]
    dead = await real_redis.xlen(dead_letter_stream(0))
    with capsys.disabled():  # the counts show in every run's output, not only on failure
        print(
            f"\nrolling upgrade {Path(old).parents[2].name[:12]} -> this build ({AGENTBUS}): "
            f"runs started {len(runs)} (paused {len(gated)}), done {len(done)}, "
            f"dead-lettered {dead}, in flight at each swap {in_flight_at_swap}"
        )
    assert dead == 0
    assert sorted(done) == sorted(runs)
    for run_id in runs:
        answer = getattr(finals[run_id][0], "answer", None) or ""
        assert "437" in answer, (runs[run_id], answer)
    assert all(n > 0 for n in in_flight_at_swap)  # each swap happened under load
