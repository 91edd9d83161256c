"""Chaos for team runs: runs of a team go through real worker processes while the
workers that run its steps are SIGKILLed with steps in hand (every few seconds, and started
again at once): `agent` workers for the translate team (two declared agents), and `agent`,
`critic` and `verifier` workers for the checked team (a writer, then the built-in judges).
Every run must end ``done`` exactly once, with the answer its agents gave, each of its
steps published once (no step repeated, none lost), and the tokens its budget counter
holds equal to what its ``done`` says it spent.

``AGENTBUS_TEAM_CHAOS_RUNS`` sets how many runs (default 8)."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from redis.asyncio import Redis

from agents.llm.scripted import BENCHMARK_ANSWER
from bus import keys
from bus.budget import BudgetLedger
from bus.commands import AgentTask, Command, RunSettings, RunState, deadline_in, new_run_id
from bus.publish import publish
from bus.run_state import Budgets
from bus.settings import BusSettings
from bus.transcript import fold
from tests.conftest import TEST_REDIS_URL
from tests.integration.agents.teams.examples import pinned
from tests.processes import process_env, processes, spawn
from tests.support import events_of, stream_commands, until_groups, wait_for

RUNS = int(os.environ.get("AGENTBUS_TEAM_CHAOS_RUNS", "8"))
IN_FLIGHT = 3
#: A worker starts in 3-8 s on a loaded 2-core host: kill a role's workers faster and one
#: step is killed on every delivery until it is dead-lettered.
KILL_EVERY_S = 8.0


class Workers:
    """Two worker processes per role kept alive: a dead one is started again at once."""

    def __init__(self, env: dict[str, str], logs: Path, procs: list[subprocess.Popen[bytes]]):
        self._env, self._logs, self._procs = env, logs, procs
        self._started = 0
        self.live: dict[subprocess.Popen[bytes], str] = {}
        self.kills: Counter[str] = Counter()
        self._due: dict[str, float] = {}  # per role: when its workers may be killed again

    def start(self, role: str) -> None:
        log = self._logs / f"{role}-{self._started}.log"
        self._started += 1
        proc = spawn(["worker", role, "--concurrency", "4"], self._env, log)
        self._procs.append(proc)
        self.live[proc] = role

    async def kill_busy(self, redis: Redis) -> str | None:
        """SIGKILL a worker with steps in hand, of a role not killed for `KILL_EVERY_S` or
        more (the least killed first); its role, or None when no such worker has any."""
        now = time.monotonic()
        roles = {r for r in self.live.values() if self._due.get(r, 0.0) <= now}
        busy: set[str] = set()
        for role in roles:
            stream = keys.role_stream(keys.Role(role), 0)
            consumers = await redis.xinfo_consumers(stream, role)
            busy |= {c["name"].decode() for c in consumers if c["pending"] > 0}
        pool = [
            p
            for p in self.live
            if self.live[p] in roles and p.poll() is None and any(f"-{p.pid}-" in n for n in busy)
        ]
        if not pool:
            return None
        fewest = min(self.kills[self.live[p]] for p in pool)
        proc = random.choice([p for p in pool if self.kills[self.live[p]] == fewest])
        role = self.live[proc]
        proc.send_signal(signal.SIGKILL)
        self.kills[role] += 1
        self._due[role] = now + random.uniform(KILL_EVERY_S, 2 * KILL_EVERY_S)
        return role

    def restart_dead(self) -> None:
        for proc in [p for p in self.live if p.poll() is not None]:
            self.start(self.live.pop(proc))


def _run(run_id: str, team: str) -> Command:
    settings = RunSettings(
        mode="custom",
        team=pinned(team),
        budgets=Budgets(tenant_month_tokens=1_000_000_000),  # metered, not limited
    )
    return Command(
        run_id=run_id,
        tenant_id="t1",
        subject="alice",
        role=keys.Role.INTAKE,
        deadline=deadline_in(280),
        payload=AgentTask(state=RunState(question="What is 23 × 19?", settings=settings)),
    )


async def _ended(redis: Redis, run_id: str) -> bool:
    last = await redis.xrevrange(keys.run_events(run_id, 0), count=1)
    return bool(last) and b'"type":"done"' in last[0][1][b"data"]


async def _going(redis: Redis, runs: list[str]) -> int:
    return sum([not await _ended(redis, r) for r in runs])


#: Per team: the roles whose workers are killed, and the steps each of its runs publishes
#: to them (the finalizer's one step is counted too).
TEAMS = {
    "translate": {"agent": 2},
    "checked": {"agent": 1, "critic": 1, "verifier": 1},
}


@pytest.mark.timeout(400)  # several processes start on a busy 2-core host
@pytest.mark.parametrize("team", sorted(TEAMS))
async def test_team_runs_finish_once_while_their_workers_are_killed(
    real_redis: Redis, tmp_path: Path, team: str
) -> None:
    steps = {**TEAMS[team], "finalizer": 1}
    env = await process_env(
        tmp_path,
        AGENTBUS_LLM="scripted",
        AGENTBUS_LLM_TOKEN_DELAY_S="0.04",  # an agent step streams for ~1.6 s
        AGENTBUS_LLM_LATENCY_S="1.0",  # and a judge's (a short verdict) lasts over a second
        # A step's claim is kept alive every 300 ms; on a loaded 2-core host a 1 s idle
        # time let a live worker's step be reclaimed while it still ran.
        AGENTBUS_CLAIM_IDLE_MS="3000",
        AGENTBUS_HEARTBEAT_MS="300",
        AGENTBUS_READ_BLOCK_MS="100",
        AGENTBUS_MAX_DELIVERIES="50",
    )
    runs: list[str] = []
    started = time.monotonic()
    with processes() as procs:
        for role in ("intake", "finalizer", "recorder"):
            procs.append(spawn(["worker", role], env, tmp_path / f"{role}.log"))
        workers = Workers(env, tmp_path, procs)
        for role in TEAMS[team]:
            workers.start(role)
            workers.start(role)
        await until_groups(real_redis, ["intake", *TEAMS[team], "finalizer"])

        async def killer() -> None:
            while True:
                await asyncio.sleep(0.2)
                workers.restart_dead()
                await workers.kill_busy(real_redis)

        loop = asyncio.create_task(killer())
        try:
            for _ in range(RUNS):
                run_id = new_run_id()
                runs.append(run_id)
                await publish(real_redis, _run(run_id, team), BusSettings(redis_url=TEST_REDIS_URL))

                async def room() -> bool:
                    return await _going(real_redis, runs) < IN_FLIGHT

                await wait_for(room, within=300, interval=0.2)

            async def all_done() -> bool:
                return await _going(real_redis, runs) == 0

            await wait_for(all_done, within=300, interval=0.5)
        finally:
            loop.cancel()
            await asyncio.gather(loop, return_exceptions=True)

    published = {
        role: Counter(c.run_id for c in await stream_commands(real_redis, keys.Role(role)))
        for role in steps
    }
    done = duplicates = lost = mismatched = shown_otherwise = retries = 0
    wrong: list[str] = []
    for run_id in runs:
        events = await events_of(real_redis, run_id)
        ends = [e for e in events if e.type == "done"]
        done += len(ends) == 1 and ends[0].status == "done"
        if getattr(ends[-1], "answer", None) != BENCHMARK_ANSWER:
            wrong.append(run_id)
        transcript = fold(events)
        retries += transcript.retries
        if transcript.answer != BENCHMARK_ANSWER:  # what a client following it was shown
            shown_otherwise += 1
            print(f"{run_id}: {[(e.type, e.step_id) for e in events if e.type != 'answer']}")
        # Each step published once: none repeated, none lost.
        for role, count in steps.items():
            duplicates += max(0, published[role][run_id] - count)
            lost += max(0, count - published[role][run_id])
        usage: dict[str, int] = getattr(ends[-1], "usage", {})
        spent = usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)
        charged = (await BudgetLedger(real_redis, "t1").spent(f"run:{run_id}")).tokens
        mismatched += charged != spent
    print(
        f"team chaos ({team}): runs={RUNS} done={done} kills={dict(workers.kills)} "
        f"retries={retries} "
        f"duplicates={duplicates} lost={lost} budget_mismatches={mismatched} "
        f"shown_otherwise={shown_otherwise} wrong_answer={len(wrong)} "
        f"seconds={time.monotonic() - started:.1f}"
    )
    assert not wrong, f"runs whose answer is not the agents': {wrong}"
    assert (done, duplicates, lost, mismatched, shown_otherwise) == (RUNS, 0, 0, 0, 0)
    assert set(workers.kills) == set(TEAMS[team])  # every role's workers were killed
