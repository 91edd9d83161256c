"""Budgets end runs, at every level, over a real Redis with every role running: a run's
own tokens (cut mid-answer, or refused before its first call), a user's day (another user
goes on), a tenant's month in dollars, and 32 runs at once against one budget."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from agents.budget import tenant_scope, user_scope
from agents.llm.scripted import ScriptedLLM, text, turn
from api.app.run_view import describe
from bus import keys
from bus.budget import BudgetLedger
from bus.commands import AgentTask, Command, RunSettings, RunState, deadline_in, new_run_id
from bus.events import ClientEvent, Done, ErrorEvent
from bus.publish import publish, read_events
from bus.run_state import Budgets
from bus.store import Scope

# About 6,000 tokens as the budget estimates them; every word its own, since one word
# repeated is a runaway the researcher stops on its own (`agents.checks.answer_guard`).
LONG = " ".join(f"word{i}" for i in range(3000))


async def ask(system: Any, subject: str = "alice", **budgets: Any) -> list[ClientEvent]:
    """A single-mode run of ``subject`` with these budgets; its events up to ``done``."""
    run_id = new_run_id()
    command = Command(
        run_id=run_id,
        tenant_id="t1",
        subject=subject,
        role=keys.Role.INTAKE,
        deadline=deadline_in(60),
        payload=AgentTask(
            state=RunState(
                question="What is 23 × 19?", settings=RunSettings(budgets=Budgets(**budgets))
            )
        ),
    )
    await publish(system.redis, command, system.settings)
    async with asyncio.timeout(70):
        return [e async for _, e in read_events(system.redis, run_id, 0, block_ms=200)]


def ending(events: list[ClientEvent]) -> tuple[str, str | None]:
    """How the run ended, and the budget its error names (None: no budget error)."""
    done = events[-1]
    assert isinstance(done, Done)
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    return done.status, errors[-1].budget if errors else None


def answer_of(events: list[ClientEvent]) -> str:
    return "".join(e.delta for e in events if e.type == "answer")


async def spent(system: Any, scope: str) -> int:
    return (await BudgetLedger(system.redis, "t1").spent(scope)).tokens


async def test_a_run_token_budget_cuts_the_answer_mid_stream(start_system: Any) -> None:
    system = await start_system(ScriptedLLM([turn(text(LONG))], cycle=True))
    events = await ask(system, run_tokens=4000)
    assert ending(events) == ("budget_exhausted", "run_tokens")
    shown = answer_of(events)
    assert shown and len(shown) < len(LONG)  # part of the answer, not all of it
    run_id = events[-1].run_id
    assert await spent(system, f"run:{run_id}") <= 4000
    record = describe(run_id, await system.stores.runs.get(Scope.user("t1", "alice"), run_id))
    assert record.status == "budget_exhausted" and record.partial
    assert record.partial_answer is not None and shown.startswith(record.partial_answer[:100])


async def test_a_budget_smaller_than_the_prompt_refuses_the_first_call(
    start_system: Any,
) -> None:
    model = ScriptedLLM([turn(text(LONG))], cycle=True)
    system = await start_system(model)
    events = await ask(system, run_tokens=5)
    assert ending(events) == ("budget_exhausted", "run_tokens")
    assert answer_of(events) == "" and model.requests == []  # the model was never called
    assert await spent(system, f"run:{events[-1].run_id}") == 0


async def test_a_user_daily_budget_stops_that_user_only(start_system: Any) -> None:
    system = await start_system(ScriptedLLM())
    # About 160 tokens a run; a call needs room for its prompt (500-800 estimated).
    endings = [ending(await ask(system, user_day_tokens=1500)) for _ in range(12)]
    assert ("done", None) in endings
    assert ("budget_exhausted", "user_day_tokens") in endings
    assert endings[0] == ("done", None) and endings[-1] == ("budget_exhausted", "user_day_tokens")
    assert await spent(system, user_scope("alice", "day", time.time())) <= 1500
    # Bob's day is his own: the same limit, nothing spent yet.
    assert ending(await ask(system, "bob", user_day_tokens=1500)) == ("done", None)


async def test_a_tenant_monthly_cost_budget_is_counted_in_dollars(start_system: Any) -> None:
    prices = {"scripted": {"input": 1.0, "output": 2.0}}  # dollars per 1,000 tokens
    system = await start_system(ScriptedLLM(), llm_prices=prices)
    # About $0.21 a run; a call holds its tokens at $0.002 each.
    endings = [ending(await ask(system, tenant_month_cost_usd=2.5)) for _ in range(12)]
    assert ("done", None) in endings
    assert ("budget_exhausted", "tenant_month_cost_usd") in endings
    month = await BudgetLedger(system.redis, "t1").spent(tenant_scope("month", time.time()))
    assert 0 < month.cost_usd <= 2.5


async def test_32_concurrent_runs_overshoot_a_budget_by_at_most_one_hold(
    start_system: Any,
) -> None:
    system = await start_system(ScriptedLLM(latency=0.2))
    limit = 4000
    runs = await asyncio.gather(*(ask(system, tenant_month_tokens=limit) for _ in range(32)))
    endings = [ending(events) for events in runs]
    done = sum(1 for e in endings if e == ("done", None))
    stopped = sum(1 for e in endings if e == ("budget_exhausted", "tenant_month_tokens"))
    assert done >= 1 and stopped >= 1 and done + stopped == 32
    used = await spent(system, tenant_scope("month", time.time()))
    # The scripted model reports fewer tokens than a call holds, so no overshoot at all:
    # holds never add up past the limit.
    assert used <= limit
    ledger = BudgetLedger(system.redis, "t1")
    assert await ledger.held(tenant_scope("month", time.time())) == 0  # every hold settled
    # Every finished run's tokens were charged, and none twice.
    finished = sum(sum(_total(e) for e in events if isinstance(e, Done)) for events in runs)
    assert finished <= used


def _total(done: Done) -> int:
    return done.usage.get("prompt_tokens", 0) + done.usage.get("completion_tokens", 0)


async def test_a_run_no_budget_limits_is_counted_for_its_user_and_tenant(
    start_system: Any,
) -> None:
    system = await start_system(ScriptedLLM())
    events = await ask(system, "carol")
    done = events[-1]
    assert isinstance(done, Done) and done.status == "done"
    tokens = done.usage["prompt_tokens"] + done.usage["completion_tokens"]
    now = time.time()
    assert tokens > 0
    assert await spent(system, user_scope("carol", "day", now)) == tokens
    assert await spent(system, user_scope("carol", "month", now)) == tokens
    assert await spent(system, tenant_scope("month", now)) == tokens
    # Nothing reserved, and the run's own counter is kept only for a run budget.
    assert await spent(system, f"run:{done.run_id}") == 0
    assert await system.redis.exists(keys.budget_holds("t1")) == 0
