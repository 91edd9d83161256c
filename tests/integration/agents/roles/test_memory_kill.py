"""The memory step under SIGKILL: a memory worker dies with its records uncommitted, another
process reclaims the step, and each memory is written exactly once, with its provenance."""

from __future__ import annotations

import signal
from pathlib import Path

from redis.asyncio import Redis

from bus import keys
from bus.commands import AgentTask, Command, RunSettings, RunState, deadline_in, new_run_id
from bus.ledger import LedgerRecord
from bus.publish import publish
from bus.settings import BusSettings
from bus.store import MemoryStore, Scope, make_engine
from tests.conftest import TEST_REDIS_URL
from tests.processes import process_env, processes, spawn
from tests.support import events_of, until_groups, wait_for

QUESTION = "I work in the Lisbon office and please answer in Portuguese. What is 23 × 19?"


async def memory_records(redis: Redis, run_id: str) -> list[LedgerRecord]:
    """The memory records committed steps sent to the recorder for this run."""
    found: list[LedgerRecord] = []
    for _, fields in await redis.xrange(keys.role_stream(keys.Role.RECORDER, 0)):
        record = LedgerRecord.model_validate_json(fields[b"data"])
        if record.kind == "memory" and record.data["run_id"] == run_id:
            found.append(record)
    return found


async def test_a_memory_worker_killed_mid_step_leaves_each_memory_once(
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
    roles = ["intake", "researcher", "gateway", "finalizer", "recorder"]
    with processes() as procs:
        procs.append(spawn(["worker", *roles], env, tmp_path / "run.log"))
        doomed = spawn(["worker", "memory"], env | armed, tmp_path / "memory-a.log")
        procs.append(doomed)

        await until_groups(real_redis, [*roles[:-1], "memory"])
        run_id = new_run_id()
        command = Command(
            run_id=run_id,
            tenant_id="t1",
            subject="alice",
            role=keys.Role.INTAKE,
            deadline=deadline_in(120),
            payload=AgentTask(
                state=RunState(
                    question=QUESTION,
                    conversation_id=new_run_id(),
                    settings=RunSettings(mode="single", memory=True),
                )
            ),
        )
        await publish(real_redis, command, BusSettings(redis_url=TEST_REDIS_URL))

        async def died() -> bool:
            return doomed.poll() is not None

        await wait_for(died, within=60)
        assert doomed.returncode == -signal.SIGKILL and once.exists()
        memory_stream = keys.role_stream(keys.Role.MEMORY, 0)
        assert (await real_redis.xpending(memory_stream, "memory"))["pending"] == 1
        assert await memory_records(real_redis, run_id) == []  # nothing of it committed

        procs.append(spawn(["worker", "memory"], env, tmp_path / "memory-b.log"))
        engine = make_engine(env["AGENTBUS_DATABASE_URL"])
        store = MemoryStore(engine)
        owner = Scope.user("t1", "alice")
        try:

            async def written() -> bool:
                return len(await store.list(owner)) == 2

            await wait_for(written, within=60, interval=0.1)
            records = await memory_records(real_redis, run_id)
            found = await store.list(owner)
        finally:
            await engine.dispose()

    assert sorted(r.data["topic"] for r in records) == ["language", "workplace"]
    assert len({r.key for r in records}) == 2  # one commit: each statement once
    assert sorted(m.topic for m in found) == ["language", "workplace"]
    assert {m.run_id for m in found} == {run_id}
    assert all(m.message_id is not None for m in found)
    events = await events_of(real_redis, run_id)
    # The run ended once, before the memory step; the step added nothing to its events.
    assert [e.type for e in events].count("done") == 1 and events[-1].type == "done"
    assert not any(e.type in ("error", "step_retry") for e in events)
