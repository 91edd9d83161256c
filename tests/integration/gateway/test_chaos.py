"""Chaos: multi accurate runs through real processes while gateways are SIGKILLed, at random
(first one with steps in hand, then every 4-8 s one that is up, every other time one with
steps in hand) and inside the side-effect window (the test-only fault points fire by
chance, 3% per point), and every killed gateway is started again. Each run's model asks
for one side-effecting tool (the four of `kill_harness`, in turn); what the downstream
files hold is checked per run:

* every run ends ``done``, with one ``done`` event;
* no effect happened more often than the model asked for it (no duplicates);
* a tool with an idempotency key took effect exactly once per call, and ended ``ok``;
* a tool without one took effect at most once, and once whenever it ended ``ok``;
  ``outcome_unknown`` is the only way it may end without its effect known;
* every run's budget counter holds exactly the tokens its ``done`` event says it spent
  (the runs are metered: a charge lost or doubled shows here; a run that ends otherwise
  reports no usage to compare with).

The same runs go through a team too: one declared agent (the ``agent`` role) that may call
the four tools, calls the one asked for through the gateway, and hands its answer to the
finalizer.

``make test`` runs a short one of each. The issue's acceptance run is the same test with
``AGENTBUS_CHAOS_RUNS=200`` (``AGENTBUS_CHAOS_REPORT=path`` writes its figures as JSON).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pytest
from redis.asyncio import Redis

from bus import keys
from bus.budget import BudgetLedger
from bus.commands import AgentTask, Command, RunSettings, RunState, deadline_in, new_run_id
from bus.events import ClientEvent
from bus.publish import publish
from bus.run_state import Budgets
from bus.settings import BusSettings
from bus.store.migrate import upgrade_async
from bus.team_run import PinnedTeam
from tests.conftest import TEST_REDIS_URL
from tests.integration.gateway.kill_harness import TOOLS, EffectTool, gateway_env
from tests.processes import processes, spawn
from tests.support import events_of, wait_for

RUNS = int(os.environ.get("AGENTBUS_CHAOS_RUNS", "8"))
IN_FLIGHT = int(os.environ.get("AGENTBUS_CHAOS_IN_FLIGHT", "4"))
#: A gateway starts in 3-8 s on a loaded 2-core host: kill faster and none is ever up.
KILL_EVERY_S = float(os.environ.get("AGENTBUS_CHAOS_KILL_EVERY_S", "4"))
AGENT_ROLES = [
    "intake",
    "planner",
    "researcher",
    "critic",
    "verifier",
    "finalizer",
    "agent",
    "recorder",
]
POINTS = "after_claim,after_tool,before_record,before_commit"
STREAM = keys.role_stream(keys.Role.GATEWAY, 0)


@dataclass
class Figures:
    """What the run saw; printed, and written to ``AGENTBUS_CHAOS_REPORT`` if set."""

    runs: int = 0
    done: int = 0
    random_kills: int = 0
    fault_kills: int = 0
    duplicates: int = 0
    outcome_unknown: int = 0
    budget_mismatches: int = 0
    effects: dict[str, int] = field(default_factory=lambda: {})
    seconds: float = 0.0


class Gateways:
    """Two gateway processes kept alive: a dead one is started again at once."""

    def __init__(self, env: dict[str, str], logs: Path, procs: list[subprocess.Popen[bytes]]):
        self._env = env
        self._logs = logs
        self._procs = procs
        self._started = 0
        self.live: list[subprocess.Popen[bytes]] = []
        self.ours: set[int] = set()  # pids this test killed (the rest killed themselves)
        self.fault_kills = 0

    def start(self) -> None:
        log = self._logs / f"gateway-{self._started}.log"
        self._started += 1
        proc = spawn(["worker", "gateway", "--concurrency", "4"], self._env, log)
        self._procs.append(proc)
        self.live.append(proc)

    async def kill_one(self, redis: Redis, *, busy_only: bool = False) -> bool:
        """SIGKILL a gateway that is consuming, one with steps in hand (tools running) every
        other time (with ``busy_only``, only such a one); False when there is none (a kill
        during start-up proves nothing)."""
        consumers = await redis.xinfo_consumers(STREAM, "gateway")
        ready = {c["name"].decode(): c["pending"] for c in consumers}
        up = [
            (p, pending)
            for p in self.live
            if p.poll() is None
            for name, pending in ready.items()
            if f"-{p.pid}-" in name
        ]
        busy = [p for p, pending in up if pending > 0]
        pool = busy if busy_only or (busy and random.random() < 0.5) else [p for p, _ in up]
        if not pool:
            return False
        proc = random.choice(pool)
        self.ours.add(proc.pid)
        proc.send_signal(signal.SIGKILL)
        return True

    def restart_dead(self) -> None:
        for proc in [p for p in self.live if p.poll() is not None]:
            self.live.remove(proc)
            if proc.pid not in self.ours and proc.returncode == -signal.SIGKILL:
                self.fault_kills += 1
            self.start()


def question(tool: EffectTool, marker: str) -> str:
    return f"Record this: call {tool.name} with {json.dumps(tool.arguments(marker))}"


@pytest.mark.timeout(300)  # several processes start on a busy 2-core host
@pytest.mark.parametrize("team", [False, True], ids=["multi", "team"])
async def test_runs_finish_and_no_effect_repeats_while_gateways_are_killed(
    real_redis: Redis, tmp_path: Path, team: bool
) -> None:
    db = f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
    await upgrade_async(db)
    env = {**gateway_env(tmp_path, db), "AGENTBUS_LLM": "scripted", "AGENTBUS_MAX_DELIVERIES": "20"}
    chaos = {
        "AGENTBUS_TEST_FAULTS": "1",
        "AGENTBUS_FAULT_POINT": POINTS,
        "AGENTBUS_FAULT_CHANCE": "0.03",
    }
    settings = BusSettings(redis_url=TEST_REDIS_URL)
    figures = Figures(runs=RUNS)
    runs: list[tuple[EffectTool, str]] = []
    started = time.monotonic()
    with processes() as procs:
        procs.append(spawn(["worker", *AGENT_ROLES, "--concurrency", "8"], env, tmp_path / "a.log"))
        gateways = Gateways({**env, **chaos}, tmp_path, procs)
        gateways.start()
        gateways.start()
        await wait_for(lambda: _streams_ready(real_redis), within=120)

        async def killer() -> None:
            due = 0.0  # the first kill as soon as a gateway has steps in hand
            while True:
                await asyncio.sleep(0.2)
                first = figures.random_kills == 0
                if time.monotonic() >= due and await gateways.kill_one(real_redis, busy_only=first):
                    figures.random_kills += 1
                    due = time.monotonic() + random.uniform(KILL_EVERY_S, 2 * KILL_EVERY_S)

        async def supervisor() -> None:
            while True:
                gateways.restart_dead()
                await asyncio.sleep(0.1)

        loops = [asyncio.create_task(killer()), asyncio.create_task(supervisor())]
        try:
            for n in range(RUNS):
                tool, run_id = TOOLS[n % len(TOOLS)], new_run_id()
                runs.append((tool, run_id))
                command = _run(run_id, question(tool, run_id), team=team)
                await publish(real_redis, command, settings)
                await wait_for(
                    lambda: _in_flight(real_redis, runs, IN_FLIGHT), within=400, interval=0.2
                )
            await wait_for(lambda: _in_flight(real_redis, runs, 1), within=400, interval=0.5)
        finally:
            for loop in loops:
                loop.cancel()
            await asyncio.gather(*loops, return_exceptions=True)
        gateways.restart_dead()
        figures.fault_kills = gateways.fault_kills

    effects = tmp_path / "effects"
    failures: list[str] = []
    for tool, run_id in runs:
        events = await events_of(real_redis, run_id)
        ends = [e for e in events if e.type == "done"]
        figures.done += bool(ends) and ends[-1].status == "done"
        count = tool.effects(effects, run_id)
        figures.effects[str(count)] = figures.effects.get(str(count), 0) + 1
        asked = len({e.call_id for e in events if e.type == "tool_call"})
        codes = [e.code for e in events if e.type == "tool_result"]
        figures.duplicates += max(0, count - asked)
        figures.outcome_unknown += codes.count("outcome_unknown")
        failures += _problems(tool, run_id, events, count, codes)
        finished = bool(ends) and ends[-1].status == "done"  # only `done` reports its usage
        if finished and (charged := await _charged(real_redis, run_id)) != _spent(ends[-1]):
            figures.budget_mismatches += 1
            failures.append(f"{run_id}: charged {charged} tokens, spent {_spent(ends[-1])}")
    figures.seconds = round(time.monotonic() - started, 1)
    _report(figures)
    assert figures.duplicates == 0 and figures.budget_mismatches == 0, failures[:10]
    assert not failures, failures[:10]
    assert figures.done == RUNS
    assert figures.random_kills > 0


def _report(figures: Figures) -> None:
    print(f"chaos figures: {json.dumps(asdict(figures))}")
    if report := os.environ.get("AGENTBUS_CHAOS_REPORT"):
        Path(report).write_text(json.dumps(asdict(figures), indent=2))


def _problems(
    tool: EffectTool, run_id: str, events: list[ClientEvent], count: int, codes: list[str]
) -> list[str]:
    """What is wrong with one run's ending, as a user would see it."""
    problems: list[str] = []
    if [e.type for e in events].count("done") != 1:
        problems.append(f"{run_id}: not exactly one done event")
    if len(codes) != 1:
        problems.append(f"{run_id}: {len(codes)} tool results for one call")
    elif tool.keyed and (count, codes[0]) != (1, "ok"):
        problems.append(f"{run_id} {tool.name}: {count} effects, {codes[0]} (want 1, ok)")
    elif not tool.keyed and (count > 1 or (codes[0] == "ok" and count != 1)):
        problems.append(f"{run_id} {tool.name}: {count} effects, {codes[0]}")
    elif codes[0] not in ("ok", "outcome_unknown"):
        problems.append(f"{run_id} {tool.name}: ended {codes[0]}")
    return problems


async def _charged(redis: Redis, run_id: str) -> int:
    """The tokens the run's budget counter holds."""
    return (await BudgetLedger(redis, "t1").spent(f"run:{run_id}")).tokens


def _spent(done: ClientEvent) -> int:
    usage: dict[str, int] = getattr(done, "usage", {})
    return usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)


#: A team of one declared agent that may call the four tools.
RECORDER = PinnedTeam(
    name="recorder",
    version=1,
    document={
        "agents": [
            {
                "name": "recorder",
                "instructions": "Record what you are asked to, with the tool it names.",
                "tools": [t.name for t in TOOLS],
            }
        ],
        "edges": [
            {"from": "intake", "on": "admitted", "to": "recorder"},
            {"from": "recorder", "on": "answer", "to": "finalizer"},
        ],
    },
)


def _run(run_id: str, text: str, *, team: bool) -> Command:
    metered = Budgets(tenant_month_tokens=1_000_000_000)  # metered, not limited
    if team:
        settings = RunSettings(mode="custom", team=RECORDER, budgets=metered)
    else:
        settings = RunSettings(
            mode="multi", accuracy="accurate", verifier_check=False, budgets=metered
        )
    return Command(
        run_id=run_id,
        tenant_id="t1",
        subject="alice",
        role=keys.Role.INTAKE,
        deadline=deadline_in(240),
        payload=AgentTask(state=RunState(question=text, settings=settings)),
    )


async def _streams_ready(redis: Redis) -> bool:
    for role in ["intake", "researcher", "gateway", "verifier", "finalizer", "agent"]:
        stream = keys.role_stream(role, 0)
        if not await redis.exists(stream) or not await redis.xinfo_groups(stream):
            return False
    return True


async def _ended(redis: Redis, run_id: str) -> bool:
    last = await redis.xrevrange(keys.run_events(run_id, 0), count=1)
    return bool(last) and b'"type":"done"' in last[0][1][b"data"]


async def _in_flight(redis: Redis, runs: list[tuple[EffectTool, str]], most: int) -> bool:
    """Fewer than ``most`` of ``runs`` are still going (their last event is not ``done``)."""
    going = 0
    for _, run_id in runs:
        going += not await _ended(redis, run_id)
        if going >= most:
            return False
    return True
