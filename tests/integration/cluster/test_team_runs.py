"""Team runs on a Redis Cluster: the four example teams of docs/teams.md, spread over the
shards of its masters, through intake, `agent`, critic, verifier and finalizer worker
processes, with the scripted model."""

from __future__ import annotations

from pathlib import Path

import pytest
from redis.asyncio import Redis

from agentbus_bench.local_cluster import LocalCluster
from agents.llm.scripted import BENCHMARK_ANSWER
from bus import keys
from bus.commands import AgentTask, Command, RunSettings, RunState, deadline_in, new_run_id
from bus.publish import publish
from bus.settings import CLUSTER_SHARDS, BusSettings
from bus.store.migrate import upgrade_async
from bus.transcript import fold
from tests.integration.agents.teams.examples import pinned
from tests.processes import processes, spawn
from tests.support import events_of, stream_commands, wait_for

#: The agent steps each example team takes with the scripted model: the researcher and the
#: translator; triage and one specialist; the writer and a reviewer whose verdict is not
#: one of its schema's (so the fallback edge takes the draft out); the writer, whose answer
#: the built-in critic and verifier approve.
AGENT_STEPS = {"translate": 2, "triage": 2, "review": 2, "checked": 1}
#: The built-in judges' steps each team takes.
JUDGE_STEPS = {"checked": {keys.Role.CRITIC: 1, keys.Role.VERIFIER: 1}}


def _run(team: str, shard: int) -> Command:
    while True:  # a run id whose shard is ``shard``
        run_id = new_run_id()
        if keys.shard_of(run_id, CLUSTER_SHARDS) == shard:
            break
    settings = RunSettings(mode="custom", team=pinned(team))
    return Command(
        run_id=run_id,
        tenant_id="t1",
        subject="alice",
        shard=shard,
        role=keys.Role.INTAKE,
        deadline=deadline_in(120),
        payload=AgentTask(state=RunState(question="What is 23 × 19?", settings=settings)),
    )


async def _groups_exist(redis: Redis) -> bool:
    for role in ("intake", "agent", "critic", "verifier", "finalizer"):
        try:
            if not await redis.xinfo_groups(keys.role_stream(role, CLUSTER_SHARDS - 1)):
                return False
        except Exception:
            return False
    return True


@pytest.mark.timeout(300)
async def test_the_example_teams_run_on_every_master(
    redis: Redis, cluster: LocalCluster, tmp_path: Path
) -> None:
    db = f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
    await upgrade_async(db)
    env = {
        "AGENTBUS_REDIS_URL": cluster.url,
        "AGENTBUS_REDIS_CLUSTER": "true",
        "AGENTBUS_DATABASE_URL": db,
        "AGENTBUS_DATA_DIR": str(tmp_path / "data"),
        "AGENTBUS_LLM": "scripted",
        "AGENTBUS_READ_BLOCK_MS": "100",
    }
    runs = {team: _run(team, i % CLUSTER_SHARDS) for i, team in enumerate(AGENT_STEPS)}
    with processes() as procs:
        procs.append(
            spawn(
                ["worker", "intake", "agent", "critic", "verifier", "finalizer", "recorder"],
                env,
                tmp_path / "w.log",
            )
        )
        await wait_for(lambda: _groups_exist(redis), within=120, interval=0.2)
        for cmd in runs.values():
            await publish(redis, cmd, BusSettings(redis_cluster=True))

        async def all_done() -> bool:
            for cmd in runs.values():
                events = await events_of(redis, cmd.run_id, cmd.shard)
                if not events or events[-1].type != "done":
                    return False
            return True

        await wait_for(all_done, within=120, interval=0.2)

    for team, cmd in runs.items():
        events = await events_of(redis, cmd.run_id, cmd.shard)
        transcript = fold(events)
        assert (transcript.status, transcript.answer) == ("done", BENCHMARK_ANSWER), team
        steps = [c for c in await stream_commands(redis, keys.Role.AGENT, cmd.shard)]
        assert len([c for c in steps if c.run_id == cmd.run_id]) == AGENT_STEPS[team], team
        for role, count in JUDGE_STEPS.get(team, {}).items():
            judged = await stream_commands(redis, role, cmd.shard)
            assert len([c for c in judged if c.run_id == cmd.run_id]) == count, (team, role)
