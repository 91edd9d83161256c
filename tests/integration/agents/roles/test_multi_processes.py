"""Multi mode with every role in its own worker process; a critic replica dies mid-run."""

from __future__ import annotations

import signal
from pathlib import Path

from redis.asyncio import Redis

from bus import keys
from bus.commands import AgentTask, Command, RunSettings, RunState, deadline_in, new_run_id
from bus.publish import publish
from bus.settings import BusSettings
from bus.transcript import fold
from tests.conftest import TEST_REDIS_URL
from tests.processes import process_env, processes, spawn
from tests.support import events_of, until_done, until_groups, wait_for

ROLES = ["intake", "planner", "researcher", "gateway", "finalizer"]


async def test_killing_a_critic_replica_mid_step_still_finishes_once(
    real_redis: Redis, tmp_path: Path
) -> None:
    env = await process_env(
        tmp_path,
        AGENTBUS_LLM="scripted",
        AGENTBUS_LLM_TOKEN_DELAY_S="0.02",
        AGENTBUS_CLAIM_IDLE_MS="1000",
        AGENTBUS_HEARTBEAT_MS="200",
        AGENTBUS_READ_BLOCK_MS="100",
    )
    critic_stream = keys.role_stream(keys.Role.CRITIC, 0)
    with processes() as procs:
        for role in ROLES:
            procs.append(spawn(["worker", role], env, tmp_path / f"{role}.log"))
        slow = {**env, "AGENTBUS_LLM_TOKEN_DELAY_S": "2"}  # killed well inside its critique
        critic = spawn(["worker", "critic"], slow, tmp_path / "critic-a.log")
        procs.append(critic)

        await until_groups(real_redis, [*ROLES, "critic"])
        run_id = new_run_id()
        command = Command(
            run_id=run_id,
            tenant_id="t1",
            subject="alice",
            role=keys.Role.INTAKE,
            deadline=deadline_in(120),
            payload=AgentTask(
                state=RunState(
                    question="What is 23 × 19?",
                    settings=RunSettings(mode="multi", verifier_check=False),
                )
            ),
        )
        await publish(real_redis, command, BusSettings(redis_url=TEST_REDIS_URL))

        async def critic_busy() -> bool:
            return (await real_redis.xpending(critic_stream, "critic"))["pending"] > 0

        await wait_for(critic_busy, within=60)
        critic.send_signal(signal.SIGKILL)  # mid-step: part of its critique is out
        critic.wait(10)
        procs.append(spawn(["worker", "critic"], env, tmp_path / "critic-b.log"))

        await until_done(real_redis, run_id)

    events = await events_of(real_redis, run_id)
    transcript = fold(events)
    assert transcript.status == "done" and "437" in transcript.answer
    assert any(e.type == "step_retry" and e.agent == "critic" for e in events)
    assert [e.type for e in transcript.steps].count("critique") == 1
    assert [e.type for e in events].count("done") == 1
