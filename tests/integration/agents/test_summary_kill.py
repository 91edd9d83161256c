"""A conversation's summary across a SIGKILL: the intake process dies with the summary
stored and its step not committed; another intake process takes the entry over.

Every role runs in its own process on the real Redis and one SQLite store. The user sees
one answer, the conversation holds the turn once, and the summary the dead process wrote
is the one the conversation keeps (the store holds one per folded message).
"""

from __future__ import annotations

from pathlib import Path

from redis.asyncio import Redis

from bus import keys
from bus.commands import AgentTask, Command, RunSettings, RunState, deadline_in, new_run_id
from bus.publish import publish
from bus.settings import BusSettings
from bus.store import MessageRole, open_store
from bus.transcript import fold
from tests.conftest import TEST_REDIS_URL
from tests.integration.agents.test_long_conversations import ALICE, question, seed
from tests.processes import process_env, processes, spawn
from tests.support import events_of, until_done, until_groups, wait_for

ROLES = ["researcher", "gateway", "finalizer"]


async def test_an_intake_killed_after_storing_a_summary_keeps_one_summary_and_one_turn(
    real_redis: Redis, tmp_path: Path
) -> None:
    env = await process_env(
        tmp_path,
        AGENTBUS_LLM="scripted",
        AGENTBUS_LLM_CONTEXT_TOKENS="2048",  # six long turns outgrow it: the intake folds
        AGENTBUS_CLAIM_IDLE_MS="1000",
        AGENTBUS_HEARTBEAT_MS="200",
        AGENTBUS_READ_BLOCK_MS="100",
    )
    settings = BusSettings(redis_url=TEST_REDIS_URL, database_url=env["AGENTBUS_DATABASE_URL"])
    async with open_store(settings) as stores:
        await seed(stores.conversations, "c", turns=6)
    once = tmp_path / "fired"
    dying = env | {
        "AGENTBUS_TEST_FAULTS": "1",
        "AGENTBUS_FAULT_POINT": "after_summary",
        "AGENTBUS_FAULT_ONCE": str(once),
    }
    with processes() as procs:
        for role in ROLES:
            procs.append(spawn(["worker", role], env, tmp_path / f"{role}.log"))
        first = spawn(["worker", "intake"], dying, tmp_path / "intake-a.log")
        procs.append(first)

        await until_groups(real_redis, [*ROLES, "intake"])
        run_id = new_run_id()
        command = Command(
            run_id=run_id,
            tenant_id="t1",
            subject="alice",
            role=keys.Role.INTAKE,
            deadline=deadline_in(120),
            payload=AgentTask(
                state=RunState(question=question(6), conversation_id="c", settings=RunSettings())
            ),
        )
        await publish(real_redis, command, settings)

        async def fired() -> bool:
            return once.exists()

        await wait_for(fired, within=60)
        assert first.wait(10) < 0  # it killed itself at the point, mid-step
        procs.append(spawn(["worker", "intake"], dying, tmp_path / "intake-b.log"))

        await until_done(real_redis, run_id, within=90)

    events = await events_of(real_redis, run_id)
    transcript = fold(events)
    assert transcript.status == "done" and transcript.answer
    assert [e.type for e in events].count("done") == 1
    assert any(e.type == "step_retry" and e.agent == "intake" for e in events)
    async with open_store(settings) as stores:
        assert stores.summaries is not None
        summaries = await stores.summaries.list(ALICE, "c")
        messages = await stores.conversations.history(ALICE, "c", limit=100)
    assert summaries and {s.run_id for s in summaries} == {run_id}
    assert len({s.through_message_id for s in summaries}) == len(summaries)
    turn = [m for m in messages if m.run_id == run_id]
    assert [m.role for m in turn] == [MessageRole.USER, MessageRole.ASSISTANT]
    assert turn[-1].content == transcript.answer
