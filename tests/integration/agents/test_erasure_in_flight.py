"""Erasing a user while their work is in flight in other processes: nothing of it lands.

Workers run as processes. alice's first question runs to its end, and its memory step
dies with the memory worker (SIGKILL mid-step: held, not acked). The run workers are
killed too, with alice's second question and bob's queued behind them. `agentbus erase`
(a third process) erases alice. Then fresh workers take over: bob's question runs and is
remembered, and nothing of alice's comes back: no run, no memory, no conversation in the
store, and no key or value in Redis names her runs.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

from redis.asyncio import Redis

from bus import keys
from bus.commands import AgentTask, Command, RunSettings, RunState, deadline_in, new_run_id
from bus.publish import publish
from bus.settings import BusSettings
from bus.store import ConversationStore, MemoryStore, RunStore, Scope, make_engine
from tests.conftest import TEST_REDIS_URL
from tests.integration.agents.roles.test_memory_kill import QUESTION
from tests.integration.api.test_erasure import redis_texts
from tests.processes import cli, process_env, processes, spawn
from tests.support import until_groups, wait_for

RUN_ROLES = ["intake", "researcher", "gateway", "finalizer", "recorder"]


def _question(subject: str, question: str) -> Command:
    return Command(
        run_id=new_run_id(),
        tenant_id="t1",
        subject=subject,
        role=keys.Role.INTAKE,
        deadline=deadline_in(300),
        payload=AgentTask(
            state=RunState(
                question=question,
                conversation_id=new_run_id(),
                settings=RunSettings(mode="single", memory=True),
            )
        ),
    )


async def _unsettled(redis: Redis) -> list[tuple[str, Any, Any, Any]]:
    """The groups of the intake, memory and recorder streams with an entry held or not yet
    delivered (the group's last delivered id behind the stream's last; ``lag`` counts
    deleted entries too)."""
    r: Any = redis
    found: list[tuple[str, Any, Any, Any]] = []
    for role in (keys.Role.INTAKE, keys.Role.MEMORY, keys.Role.RECORDER):
        stream = keys.role_stream(role, 0)
        last = (await r.xinfo_stream(stream))["last-generated-id"]
        for group in await r.xinfo_groups(stream):
            if group["pending"] or group["last-delivered-id"] != last:
                found.append((stream, group["name"], group["pending"], group["last-delivered-id"]))
    return found


async def test_work_in_flight_in_other_processes_writes_nothing_for_an_erased_user(
    real_redis: Redis, tmp_path: Path
) -> None:
    env = await process_env(
        tmp_path,
        AGENTBUS_LLM="scripted",
        AGENTBUS_CLAIM_IDLE_MS="1000",
        AGENTBUS_HEARTBEAT_MS="200",
        AGENTBUS_READ_BLOCK_MS="100",
    )
    once = tmp_path / "fired"
    armed = {
        "AGENTBUS_TEST_FAULTS": "1",
        "AGENTBUS_FAULT_POINT": "memory_before_commit",
        "AGENTBUS_FAULT_ONCE": str(once),
    }
    bus = BusSettings(redis_url=TEST_REDIS_URL)
    engine = make_engine(env["AGENTBUS_DATABASE_URL"])
    runs, memories = RunStore(engine), MemoryStore(engine)
    conversations = ConversationStore(engine)
    alice, bob = Scope.user("t1", "alice"), Scope.user("t1", "bob")
    try:
        with processes() as procs:
            workers = spawn(["worker", *RUN_ROLES], env, tmp_path / "run-a.log")
            doomed = spawn(["worker", "memory"], env | armed, tmp_path / "memory-a.log")
            procs += [workers, doomed]
            await until_groups(real_redis, [*RUN_ROLES[:-1], "memory"])

            first = _question("alice", QUESTION)
            await publish(real_redis, first, bus)

            async def died() -> bool:
                return doomed.poll() is not None

            await wait_for(died, within=90)
            assert doomed.returncode == -signal.SIGKILL and once.exists()
            assert [r.id for r in await runs.list(alice)] == [first.run_id]
            # Her memory step is held by the dead worker; her next question and bob's wait
            # behind run workers that die now.
            workers.send_signal(signal.SIGKILL)
            workers.wait(10)
            second = _question("alice", "I live in Porto. What is 12 × 12?")
            his = _question("bob", QUESTION)
            await publish(real_redis, second, bus)
            await publish(real_redis, his, bus)

            await cli(["erase", "--user", "alice", "--tenant", "t1"], env)

            procs.append(spawn(["worker", *RUN_ROLES], env, tmp_path / "run-b.log"))
            procs.append(spawn(["worker", "memory"], env, tmp_path / "memory-b.log"))

            async def bob_remembered() -> bool:
                return len(await memories.list(bob)) == 2

            await wait_for(bob_remembered, within=120, interval=0.2)

            async def settled() -> bool:
                return not await _unsettled(real_redis)

            try:
                await wait_for(settled, within=60, interval=0.2)
            except AssertionError:
                raise AssertionError(f"still in flight: {await _unsettled(real_redis)}") from None

            assert await runs.list(alice) == []
            assert await memories.list(alice) == []
            assert await conversations.list(alice) == []
            assert [r.id for r in await runs.list(bob)] == [his.run_id]
            texts = await redis_texts(real_redis)
            named = [first.run_id, second.run_id, "Porto"]
            assert [t for t in texts if any(n in t for n in named)] == []
    finally:
        await engine.dispose()
