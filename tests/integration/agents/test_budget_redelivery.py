"""A redelivered step is never charged twice, and a call killed mid-stream is charged once:

* in process: the researcher's step runs to its end (the call settled) and is run again,
  as when its worker dies between the charge and the commit;
* with processes: researchers are SIGKILLed while their model calls are in flight, and
  every run's counter matches what its ``done`` event says it spent.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable
from pathlib import Path

from redis.asyncio import Redis

from agents.budget import tenant_scope
from agents.llm.scripted import ScriptedLLM
from api.compose.roles import Roles
from api.compose.settings import AppSettings
from bus import keys
from bus.budget import BudgetLedger
from bus.commands import AgentTask, Command, RunSettings, RunState, deadline_in, new_run_id
from bus.events import Done
from bus.publish import publish
from bus.run_state import Budgets, ChatMessage
from bus.runtime.context import StepContext
from bus.settings import BusSettings
from bus.store import open_store
from tests.conftest import TEST_REDIS_URL
from tests.processes import process_env, processes, spawn
from tests.support import events_of, wait_for

QUESTION = "What is 23 × 19?"
METERED = Budgets(tenant_month_tokens=10_000_000)  # a limit, so every call reserves too


def researcher_step(subject: str = "alice", deadline_s: float = 60) -> Command:
    return Command(
        run_id=new_run_id(),
        tenant_id="t1",
        subject=subject,
        role=keys.Role.RESEARCHER,
        deadline=deadline_in(deadline_s),
        payload=AgentTask(
            state=RunState(
                question=QUESTION,
                settings=RunSettings(budgets=METERED),
                messages=[
                    ChatMessage.system("You are the researcher."),
                    ChatMessage.user(QUESTION),
                ],
                base_len=2,
            )
        ),
    )


async def test_a_step_run_again_after_its_charge_is_not_charged_again(
    real_redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    s = make_settings()
    async with open_store(s.bus, migrate=True) as stores:
        handler = Roles(s, stores, llm=ScriptedLLM()).handler(keys.Role.RESEARCHER)
        command = researcher_step()
        first = await handler(StepContext(command, 1, real_redis, s.bus), command)
        # The worker died before the commit: the entry is delivered again.
        again = await handler(StepContext(command, 2, real_redis, s.bus), command)
    ledger = BudgetLedger(real_redis, "t1")
    run = await ledger.spent(f"run:{command.run_id}")
    assert run.tokens == 62  # the benchmark's tool-call turn: 50 prompt + 12 completion
    assert (await ledger.spent(tenant_scope("month", time.time()))).tokens == 62
    assert [c.role for c in first.next] == [c.role for c in again.next] == [keys.Role.GATEWAY]


async def test_researchers_killed_mid_call_charge_every_run_exactly_once(
    real_redis: Redis, tmp_path: Path
) -> None:
    env = await process_env(
        tmp_path,
        AGENTBUS_LLM="scripted",
        AGENTBUS_LLM_LATENCY_S="1.0",
        AGENTBUS_CLAIM_IDLE_MS="1000",
        AGENTBUS_HEARTBEAT_MS="200",
        AGENTBUS_READ_BLOCK_MS="100",
    )
    roles = ["intake", "gateway", "finalizer"]
    holds = keys.budget_holds("t1")
    with processes() as procs:
        for role in roles:
            procs.append(spawn(["worker", role], env, tmp_path / f"{role}.log"))
        researcher = spawn(["worker", "researcher"], env, tmp_path / "researcher-0.log")
        procs.append(researcher)

        async def groups_ready() -> bool:
            streams = [keys.role_stream(r, 0) for r in [*roles, "researcher"]]
            return all([await real_redis.exists(s) for s in streams])

        await wait_for(groups_ready, within=120)
        run_ids: list[str] = []
        for i in range(4):
            # A generous deadline: processes start, die and reclaim on a loaded host.
            command = researcher_step("alice" if i % 2 else "bob", deadline_s=300)
            command = command.model_copy(
                update={"role": keys.Role.INTAKE}
            )  # intake sets the thread
            await publish(real_redis, command, BusSettings(redis_url=TEST_REDIS_URL))
            run_ids.append(command.run_id)
        stream = keys.role_stream(keys.Role.RESEARCHER, 0)
        for kill in range(2):
            pid = researcher.pid

            async def call_in_flight(pid: int = pid) -> bool:
                consumers = await real_redis.xinfo_consumers(stream, "researcher")
                busy = any(f"-{pid}-" in c["name"].decode() and c["pending"] for c in consumers)
                return busy and await real_redis.hlen(holds) > 0  # pyright: ignore[reportGeneralTypeIssues]

            await wait_for(call_in_flight, within=60)
            await asyncio.sleep(0.3)  # inside the model's 1 s before its first token
            researcher.send_signal(signal.SIGKILL)  # the model call is under way
            researcher.wait(10)
            log = tmp_path / f"researcher-{kill + 1}.log"
            researcher = spawn(["worker", "researcher"], env, log)
            procs.append(researcher)

        async def all_done() -> bool:
            for run_id in run_ids:
                events = await events_of(real_redis, run_id)
                if not events or events[-1].type != "done":
                    return False
            return True

        await wait_for(all_done, within=300)

    ledger = BudgetLedger(real_redis, "t1")
    retried = 0
    total = 0
    for run_id in run_ids:
        events = await events_of(real_redis, run_id)
        done = events[-1]
        assert isinstance(done, Done) and done.status == "done"
        assert [e.type for e in events].count("done") == 1
        spent = done.usage["prompt_tokens"] + done.usage["completion_tokens"]
        # Charged what the run spent: not lost with the killed call, not doubled by its retry.
        assert (await ledger.spent(f"run:{run_id}")).tokens == spent
        total += spent
        retried += sum(1 for e in events if e.type == "step_retry")
    assert retried >= 2  # both kills hit a step in flight
    assert (await ledger.spent(tenant_scope("month", time.time()))).tokens == total
    assert await real_redis.hlen(holds) == 0  # pyright: ignore[reportGeneralTypeIssues]
